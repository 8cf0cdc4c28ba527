package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/idemlambda/idemlambda/internal/deadline"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// DeadlineMargin is how long before the invocation's deadline a handler
// stops waiting on the store and answers 503.
const DeadlineMargin = time.Second

// CreateHandler serves POST /products.
type CreateHandler struct {
	svc *product.Service
	log *slog.Logger
	now func() time.Time
}

// NewCreateHandler returns the handler; log receives one line per request.
func NewCreateHandler(svc *product.Service, log *slog.Logger) *CreateHandler {
	return &CreateHandler{svc: svc, log: log, now: time.Now}
}

// Handle answers one API Gateway request. It never returns an error: every
// failure is a problem+json response, so API Gateway never turns one into
// an opaque 502.
func (h *CreateHandler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	start := h.now()
	attrs := requestAttrs(ctx, req)
	resp, outcome, err := h.handle(ctx, req, &attrs)
	attrs = append(attrs, slog.String("outcome", string(outcome)))
	logRequest(ctx, h.log, "create product", attrs, resp.StatusCode, h.now().Sub(start), err)
	return resp, nil
}

func (h *CreateHandler) handle(ctx context.Context, req events.APIGatewayV2HTTPRequest, attrs *[]slog.Attr) (events.APIGatewayV2HTTPResponse, idem.Outcome, error) {
	reject := func(p idemhttp.Problem) (events.APIGatewayV2HTTPResponse, idem.Outcome, error) {
		return respond(p), idem.OutcomeRejected, errors.New(p.Detail)
	}
	if m := req.RequestContext.HTTP.Method; m != "" && m != http.MethodPost {
		return reject(methodNotAllowed(http.MethodPost))
	}
	if p := checkJSONContentType(req.Headers); p != nil {
		return reject(*p)
	}
	body, p := readBody(req)
	if p != nil {
		return reject(*p)
	}
	headerKey, hasHeader := idemhttp.HeaderV2(req.Headers, idemhttp.HeaderKey)
	if hasHeader {
		k, err := idemhttp.ParseKey(headerKey)
		if err != nil {
			return reject(idemhttp.InvalidKey(fmt.Sprintf("%s header: %v", idemhttp.HeaderKey, err)))
		}
		headerKey = k
	}
	decoded, p := decodeCreate(body)
	if p != nil {
		return reject(*p)
	}
	key := headerKey
	switch {
	case hasHeader && decoded.key != "" && decoded.key != headerKey:
		return reject(idemhttp.InvalidKey("the Idempotency-Key header and the idempotency_key field differ; send one, or both equal"))
	case !hasHeader && decoded.key == "":
		return reject(idemhttp.InvalidKey("send an Idempotency-Key header (or an idempotency_key field) with a unique value per operation"))
	case !hasHeader:
		key = decoded.key
	}
	*attrs = append(*attrs, slog.String("key_hash", keyHash(key)))
	principal, err := idemhttp.PrincipalV2(req.RequestContext)
	if err != nil {
		return reject(idemhttp.ProblemFor(err))
	}
	// Stop the work a little before Lambda's deadline, so a hung store
	// still ends in a 503 the client can act on, not a gateway timeout.
	// A lease, taken from this shorter deadline plus the store's margin,
	// still outlives the invocation.
	work, cancel := deadline.Before(ctx, DeadlineMargin)
	defer cancel()
	res, err := h.svc.Create(work, principal, key, decoded.cmd)
	if err != nil {
		return respond(idemhttp.ProblemFor(err)), res.Outcome, err
	}
	return idemhttp.APIGatewayV2(res.Response, res.Outcome == idem.OutcomeReplayed), res.Outcome, nil
}

// keyHash identifies a key in logs without logging it: keys can carry
// client data, and a log is not a place for it.
func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// logRequest writes the one line per request: info, or error for a 5xx.
func logRequest(ctx context.Context, log *slog.Logger, msg string, attrs []slog.Attr, status int, took time.Duration, err error) {
	attrs = append(attrs, slog.Int("status", status), slog.Int64("duration_ms", took.Milliseconds()))
	level := slog.LevelInfo
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
		if status >= 500 {
			level = slog.LevelError
		}
	}
	log.LogAttrs(ctx, level, msg, attrs...)
}

// requestAttrs are the ids that tie a log line to a request.
func requestAttrs(ctx context.Context, req events.APIGatewayV2HTTPRequest) []slog.Attr {
	attrs := make([]slog.Attr, 0, 8)
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		attrs = append(attrs, slog.String("aws_request_id", lc.AwsRequestID))
	}
	if id := req.RequestContext.RequestID; id != "" {
		attrs = append(attrs, slog.String("api_request_id", id))
	}
	return attrs
}
