// Package awsotel makes each AWS SDK call a client span, its request
// carrying the span's trace headers: the middleware the functions' clients
// get when tracing is on.
//
// It stands in for OpenTelemetry's contrib otelaws (deprecated, without an
// owner), which does the same but imports the DynamoDB, S3, SNS and SQS
// clients for its per-service attributes, so every bootstrap linked and
// initialised all four at each cold start. Here a DynamoDB call names its
// tables from the input's TableName fields, read by reflection; no
// service client is imported.
package awsotel

import (
	"context"
	"errors"
	"reflect"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the spans.
const ScopeName = "github.com/idemlambda/idemlambda/internal/awsotel"

// System is the rpc.system.name of every span (semconv's value for the
// AWS SDK).
const System = "aws-api"

// dynamoDB is the DynamoDB client's service id.
const dynamoDB = "DynamoDB"

type startKey struct{}

// Append adds the middleware to apiOptions (an aws.Config's, so every
// client built from it has it): each call is a span of tp's named
// "<Service>.<Operation>", a child of the span in the call's context,
// and each HTTP request, retries included, carries the headers p writes.
func Append(apiOptions *[]func(*middleware.Stack) error, tp trace.TracerProvider, p propagation.TextMapPropagator) {
	m := mw{tracer: tp.Tracer(ScopeName), propagator: p}
	*apiOptions = append(*apiOptions, m.add)
}

type mw struct {
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
}

func (m mw) add(s *middleware.Stack) error {
	// The span starts where the call does (Before: ahead of the SDK's own
	// initialisation), but needs the service, operation and region the
	// SDK's initialisers put in the context (After).
	if err := s.Initialize.Add(middleware.InitializeMiddlewareFunc("AWSOTelStart",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			return next.HandleInitialize(context.WithValue(ctx, startKey{}, time.Now()), in)
		}), middleware.Before); err != nil {
		return err
	}
	if err := s.Initialize.Add(middleware.InitializeMiddlewareFunc("AWSOTelSpan", m.span), middleware.After); err != nil {
		return err
	}
	if err := s.Finalize.Add(middleware.FinalizeMiddlewareFunc("AWSOTelInject",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if req, ok := in.Request.(*smithyhttp.Request); ok && m.propagator != nil {
				m.propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
			}
			return next.HandleFinalize(ctx, in)
		}), middleware.After); err != nil {
		return err
	}
	return s.Deserialize.Add(middleware.DeserializeMiddlewareFunc("AWSOTelResponse",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			span := trace.SpanFromContext(ctx)
			if resp, ok := out.RawResponse.(*smithyhttp.Response); ok {
				span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
			}
			if id, ok := awsmiddleware.GetRequestIDMetadata(md); ok {
				span.SetAttributes(semconv.AWSRequestID(id))
			}
			return out, md, err
		}), middleware.Before)
}

func (m mw) span(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	service, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
	attrs := []attribute.KeyValue{
		semconv.RPCSystemNameKey.String(System),
		semconv.RPCMethod(service + "/" + op),
		attribute.String("aws.region", awsmiddleware.GetRegion(ctx)),
	}
	if service == dynamoDB {
		attrs = append(attrs, semconv.DBSystemNameAWSDynamoDB)
		if tables := TableNames(in.Parameters); len(tables) > 0 {
			attrs = append(attrs, semconv.AWSDynamoDBTableNames(tables...))
		}
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)}
	if start, ok := ctx.Value(startKey{}).(time.Time); ok {
		opts = append(opts, trace.WithTimestamp(start))
	}
	ctx, span := m.tracer.Start(ctx, service+"."+op, opts...)
	defer span.End()
	out, md, err := next.HandleInitialize(ctx, in)
	if err != nil {
		span.SetAttributes(ErrorType(err))
		span.SetStatus(codes.Error, err.Error())
	}
	return out, md, err
}

// ErrorType is a failed call's error.type: the service's error code
// (ConditionalCheckFailedException, ...), or _OTHER.
func ErrorType(err error) attribute.KeyValue {
	if ae, ok := errors.AsType[smithy.APIError](err); ok && ae.ErrorCode() != "" {
		return semconv.ErrorTypeKey.String(ae.ErrorCode())
	}
	return semconv.ErrorTypeOther
}

// TableNames returns the tables a DynamoDB input names: its TableName,
// or, for a transaction, each item's, in order, once each.
func TableNames(input any) []string {
	v := reflect.ValueOf(input)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	var names []string
	add := func(s reflect.Value) {
		f := s.FieldByName("TableName")
		if f.Kind() != reflect.Pointer || f.IsNil() || f.Elem().Kind() != reflect.String {
			return
		}
		name := f.Elem().String()
		for _, n := range names {
			if n == name {
				return
			}
		}
		names = append(names, name)
	}
	add(v.Elem())
	// TransactWriteItems and TransactGetItems: []types.Transact...Item,
	// each holding one action (Put, Update, Delete, ConditionCheck, Get)
	// with its own TableName.
	if items := v.Elem().FieldByName("TransactItems"); items.Kind() == reflect.Slice {
		for i := range items.Len() {
			item := items.Index(i)
			for j := range item.NumField() {
				if a := item.Field(j); a.Kind() == reflect.Pointer && !a.IsNil() && a.Elem().Kind() == reflect.Struct {
					add(a.Elem())
				}
			}
		}
	}
	return names
}
