package product

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/outbox/outboxitem"
	"github.com/idemlambda/idemlambda/internal/tracing"
)

// ErrNotFound reports a product id with no product.
var ErrNotFound = errors.New("product: not found")

// DB is the part of the DynamoDB client a Reader uses; *dynamodb.Client
// implements it.
type DB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Config wires a Service.
type Config struct {
	// ProductsTable and OutboxTable name the tables the writes go to.
	ProductsTable, OutboxTable string
	// EventSource is the CloudEvents source of ProductCreated.
	EventSource string
	// EventRetention is the outbox item's TTL (default outbox.DefaultRetention).
	EventRetention time.Duration
	// Now replaces time.Now in tests.
	Now func() time.Time
	// Tracing records a creation's span; nil records none.
	Tracing *tracing.Tracing
	// Origin names the Region whose replica takes a creation's writes,
	// given the context Create runs in, stamped on its outbox item so
	// that on a global table only that Region's relay publishes the
	// event; nil, or "", stamps none (one Region).
	Origin func(ctx context.Context) string
}

// Scope is the instrumentation scope of the product spans.
const Scope = "github.com/idemlambda/idemlambda/internal/product"

// Service creates products.
type Service struct {
	cfg    Config
	tracer trace.Tracer
}

// NewService checks the configuration and returns the service.
func NewService(cfg Config) (*Service, error) {
	switch {
	case cfg.ProductsTable == "" || cfg.OutboxTable == "":
		return nil, errors.New("product: products and outbox table names are required")
	case cfg.EventSource == "":
		return nil, errors.New("product: event source is required")
	}
	if cfg.EventRetention <= 0 {
		cfg.EventRetention = outbox.DefaultRetention
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{cfg: cfg, tracer: cfg.Tracing.Tracer(Scope)}, nil
}

// Creation is a new product and the writes that store it: the product
// item, on the condition that its id is new, and its ProductCreated event
// in the outbox.
type Creation struct {
	Product Product
	// Writes must commit together, in one TransactWriteItems: an event
	// without its product, or a product without its event, is what the
	// outbox exists to prevent.
	Writes []types.TransactWriteItem
}

// Create makes a new product from cmd, with a new id and the time now,
// and the writes that store it. It writes nothing: the caller commits
// Writes (createproduct commits them with its idempotency key's
// completion). Creating the event is a producer span ("create
// ProductCreated", the messaging conventions' create operation), whose
// trace context (the W3C traceparent and tracestate) the event carries,
// so its consumers link their work to it and the product is one trace
// from the POST on. With tracing off, the event carries the context ctx
// has (the trace Lambda began), or none.
func (s *Service) Create(ctx context.Context, cmd CreateCommand) (Creation, error) {
	ctx, span := s.tracer.Start(ctx, "create "+EventCreated, trace.WithSpanKind(trace.SpanKindProducer))
	defer span.End()
	c, err := s.create(ctx, span, cmd)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "product not created")
	}
	return c, err
}

func (s *Service) create(ctx context.Context, span trace.Span, cmd CreateCommand) (Creation, error) {
	if cmd.createdBy == "" {
		return Creation{}, errors.New("product: a product needs its creator: the command names no caller (CreateCommand.By)")
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Creation{}, fmt.Errorf("product: new id: %w", err)
	}
	p, err := New(id, cmd.name, cmd.price, cmd.sellerID, s.cfg.Now())
	if err != nil {
		return Creation{}, err
	}
	p.createdBy = cmd.createdBy
	data, err := json.Marshal(p.CreatedData())
	if err != nil {
		return Creation{}, fmt.Errorf("product: encode event data: %w", err)
	}
	event, err := outbox.NewEvent(s.cfg.EventSource, EventCreated, id.String(), data, p.CreatedAt())
	if err != nil {
		return Creation{}, err
	}
	event.TraceParent, event.TraceState = tracing.Inject(ctx)
	if s.cfg.Origin != nil {
		event.Origin = s.cfg.Origin(ctx)
	}
	if span.IsRecording() {
		span.SetAttributes(
			semconv.MessagingSystemKey.String(tracing.EventBridge), semconv.MessagingOperationTypeCreate,
			semconv.MessagingOperationName("create"), semconv.MessagingMessageID(event.ID),
			semconv.CloudEventsEventID(event.ID), semconv.CloudEventsEventType(event.Type),
			semconv.CloudEventsEventSource(event.Source), semconv.CloudEventsEventSubject(event.Subject),
		)
	}
	eventPut, err := outboxitem.Put(event, s.cfg.OutboxTable, s.cfg.EventRetention)
	if err != nil {
		return Creation{}, err
	}
	productPut := types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(s.cfg.ProductsTable),
		Item:                     p.Item(),
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": attrID},
	}}
	return Creation{Product: p, Writes: []types.TransactWriteItem{productPut, eventPut}}, nil
}

// Reader reads products; the getproduct function needs nothing more.
type Reader struct {
	db    DB
	table string
}

// NewReader returns a Reader on the products table.
func NewReader(db DB, table string) (*Reader, error) {
	if db == nil || table == "" {
		return nil, errors.New("product: reader needs a DB and the products table name")
	}
	return &Reader{db: db, table: table}, nil
}

// Get returns a product by id, or ErrNotFound. The read is strongly
// consistent so a client following a 201's Location always finds it.
func (r *Reader) Get(ctx context.Context, id uuid.UUID) (Product, error) {
	out, err := r.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(r.table),
		Key:            map[string]types.AttributeValue{attrID: &types.AttributeValueMemberS{Value: id.String()}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Product{}, fmt.Errorf("product: get: %w", err)
	}
	if len(out.Item) == 0 {
		return Product{}, ErrNotFound
	}
	return FromItem(out.Item)
}
