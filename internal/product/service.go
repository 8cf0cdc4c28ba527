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

	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/tracing"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

// Operation is the idempotency scope's operation for product creation.
const Operation = "POST /products"

// ErrNotFound reports a product id with no product.
var ErrNotFound = errors.New("product: not found")

// DB is the part of the DynamoDB client a Reader uses; *dynamodb.Client
// implements it.
type DB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Config wires a Service.
type Config struct {
	// Store keeps the idempotency records; its mode decides one or two
	// DynamoDB round trips per first execution.
	Store *idem.Store
	// ProductsTable and OutboxTable name the tables the writes go to.
	ProductsTable, OutboxTable string
	// EventSource is the CloudEvents source of ProductCreated.
	EventSource string
	// EventRetention is the outbox item's TTL (default outbox.DefaultRetention).
	EventRetention time.Duration
	// Now replaces time.Now in tests.
	Now func() time.Time
}

// Service runs the product use cases.
type Service struct {
	cfg Config
}

// NewService checks the configuration and returns the service.
func NewService(cfg Config) (*Service, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("product: idempotency store is required")
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
	return &Service{cfg: cfg}, nil
}

// Create creates the product once per (principal, key) scope: the
// product, its ProductCreated outbox event and the key's completion commit
// in one TransactWriteItems (idem.Store.Execute owns the rest: the claim,
// the replay, the release on failure). The Result's response is the 201,
// fresh or replayed byte for byte. Errors wrap idem.ErrInFlight,
// idem.ErrKeyReuse, idem.ErrLeaseLost, idem.ErrInvalidKey or the
// infrastructure error.
func (s *Service) Create(ctx context.Context, principal, key string, cmd CreateCommand) (idem.Result, error) {
	scope, err := idem.NewScope(Operation, principal, key)
	if err != nil {
		return idem.Result{Outcome: idem.OutcomeRejected}, err
	}
	fp, err := cmd.Fingerprint()
	if err != nil {
		return idem.Result{Outcome: idem.OutcomeError}, err
	}
	return s.cfg.Store.Execute(ctx, scope, fp, func(ctx context.Context) (idem.Effect, error) {
		return s.build(ctx, cmd)
	})
}

// build makes the product, its 201 response and the business writes. The
// event carries the invocation's trace header, when Lambda gave it a
// well-formed one, so the product can be followed to its consumers.
func (s *Service) build(ctx context.Context, cmd CreateCommand) (idem.Effect, error) {
	now := s.cfg.Now()
	id, err := uuid.NewV7()
	if err != nil {
		return idem.Effect{}, fmt.Errorf("product: new id: %w", err)
	}
	p, err := New(id, cmd.name, cmd.price, cmd.sellerID, now)
	if err != nil {
		return idem.Effect{}, err
	}
	body, err := json.Marshal(p.Body())
	if err != nil {
		return idem.Effect{}, fmt.Errorf("product: encode body: %w", err)
	}
	event, err := outbox.NewEvent(s.cfg.EventSource, EventCreated, id.String(), body, p.CreatedAt())
	if err != nil {
		return idem.Effect{}, err
	}
	if h := tracing.FromContext(ctx); tracing.Valid(h) {
		event.TraceHeader = h
	}
	eventPut, err := event.Put(s.cfg.OutboxTable, s.cfg.EventRetention)
	if err != nil {
		return idem.Effect{}, err
	}
	productPut := types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(s.cfg.ProductsTable),
		Item:                     p.Item(),
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": attrID},
	}}
	return idem.Effect{
		Response: idem.Response{
			Status: 201,
			Headers: map[string]string{
				"Content-Type": "application/json",
				"Location":     "/products/" + id.String(),
			},
			Body: body,
		},
		Writes: []types.TransactWriteItem{productPut, eventPut},
	}, nil
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
