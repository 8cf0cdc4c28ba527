package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/idemlambda/idemlambda/internal/problem"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/internal/deadline"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// DeadlineMargin is how long before the invocation's deadline a handler
// stops waiting on the store and answers 503.
const DeadlineMargin = time.Second

// OperationCreateProduct is the idempotency scope's operation of product
// creation. It is part of every record id, so renaming it orphans every
// stored key; the template's LeadingKeys condition is derived from it.
const OperationCreateProduct = "POST /products"

// Creator creates products idempotently; *ProductCreator is the one in
// use. The handler depends on no more than this, so its answers can be
// tested without a store.
type Creator interface {
	Create(ctx context.Context, scope idem.Scope, cmd product.CreateCommand) (idem.Result, error)
}

var _ Creator = (*ProductCreator)(nil)

// ProductCreator makes product creation idempotent: once per (principal,
// key) scope, the product's writes commit in one TransactWriteItems with
// the key's completion, and every retry gets the first 201 back.
type ProductCreator struct {
	execute  Executor
	products *product.Service
}

// Executor runs an operation once per scope: an idempotency store's
// Execute (claim first, then commit) or Transact (claim and commit in one
// transaction), as the function's configuration chooses.
type Executor func(ctx context.Context, scope idem.Scope, fingerprint string, fn func(context.Context) (idem.Effect, error), opts ...idem.CallOption) (idem.Result, error)

// NewProductCreator returns a ProductCreator claiming its keys with execute.
func NewProductCreator(execute Executor, products *product.Service) (*ProductCreator, error) {
	if execute == nil || products == nil {
		return nil, errors.New("api: product creation needs an idempotency store's Execute or Transact and the product service")
	}
	return &ProductCreator{execute: execute, products: products}, nil
}

// Create creates the product once per scope (the store's Execute owns the
// claim, the replay and the release on failure). The Result's response is
// the 201, fresh or replayed byte for byte. Errors wrap idem.ErrInFlight,
// idem.ErrKeyReuse, idem.ErrLeaseLost, idem.ErrInvalidKey or the
// infrastructure error.
func (c *ProductCreator) Create(ctx context.Context, scope idem.Scope, cmd product.CreateCommand) (idem.Result, error) {
	fp, err := Fingerprint(cmd)
	if err != nil {
		return idem.Result{Outcome: idem.OutcomeError}, err
	}
	return c.execute(ctx, scope, fp, func(ctx context.Context) (idem.Effect, error) {
		created, err := c.products.Create(ctx, cmd)
		if err != nil {
			return idem.Effect{}, err
		}
		body, err := json.Marshal(newProductBody(created.Product))
		if err != nil {
			return idem.Effect{}, fmt.Errorf("api: encode product: %w", err)
		}
		resp, err := idemhttp.FromAPIGatewayV2(events.APIGatewayV2HTTPResponse{
			StatusCode: http.StatusCreated,
			Headers: map[string]string{
				"Content-Type": "application/json",
				"Location":     "/products/" + created.Product.ID().String(),
			},
			Body: string(body),
		})
		if err != nil {
			return idem.Effect{}, err
		}
		return idem.Effect{Response: resp, Writes: created.Writes}, nil
	})
}

// fingerprintDoc is what identifies a create request for key reuse: the
// validated fields, never the idempotency key itself. Its encoding is
// stored with every key: changing it turns every retry of a request made
// before the change into a 422.
type fingerprintDoc struct {
	Name       string `json:"name"`
	PriceCents int64  `json:"price_cents"`
	Currency   string `json:"currency"`
	SellerID   string `json:"seller_id"`
}

// Fingerprint is the SHA-256 of the command's canonical JSON.
func Fingerprint(cmd product.CreateCommand) (string, error) {
	return idem.Fingerprint(fingerprintDoc{
		Name: cmd.Name(), PriceCents: cmd.Price().Cents(), Currency: string(cmd.Price().Currency()), SellerID: cmd.SellerID().String(),
	})
}

// ProductBody is a product as the API renders it (docs/openapi.yaml,
// Product). It has the members of product.CreatedData today, but answers
// to the API's clients, where that type answers to the event's consumers:
// either can change without the other.
type ProductBody struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	PriceCents int64  `json:"price_cents"`
	Currency   string `json:"currency"`
	SellerID   string `json:"seller_id"`
	CreatedAt  string `json:"created_at"`
}

func newProductBody(p product.Product) ProductBody {
	return ProductBody{
		ID: p.ID().String(), Name: p.Name(),
		PriceCents: p.Price().Cents(), Currency: string(p.Price().Currency()),
		SellerID: p.SellerID().String(), CreatedAt: p.CreatedAt().Format(product.TimeLayout),
	}
}

// CreateHandler serves POST /products.
type CreateHandler struct {
	svc Creator
	// idem is the library's way in for a handler that calls the store
	// itself: the key, the caller under its principal policy (a route
	// without an authorizer is the one anonymous scope, as the API has
	// always served it), the scope, and the answers.
	idem *idemhttp.Middleware
}

// NewCreateHandler returns the handler of svc, whose calls go to store.
func NewCreateHandler(svc Creator, store *idem.Store) (*CreateHandler, error) {
	mw, err := idemhttp.New(store, idemhttp.WithOperation(OperationCreateProduct), idemhttp.WithAnonymous(),
		idemhttp.WithProblemTypeBase(problem.TypeBase))
	if err != nil {
		return nil, err
	}
	return &CreateHandler{svc: svc, idem: mw}, nil
}

// Serve answers one API Gateway request.
func (h *CreateHandler) Serve(ctx context.Context, req events.APIGatewayV2HTTPRequest) Reply {
	reject := func(p problem.Problem) Reply { return fail(p, idem.OutcomeRejected, errors.New(p.Detail)) }
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
			return reject(probKey.WithDetail(fmt.Sprintf("%s header: %v", idemhttp.HeaderKey, err)))
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
		return reject(probKey.WithDetail("the Idempotency-Key header and the idempotency_key field differ; send one, or both equal"))
	case !hasHeader && decoded.key == "":
		return reject(probKey.WithDetail("send an Idempotency-Key header (or an idempotency_key field) with a unique value per operation"))
	case !hasHeader:
		key = decoded.key
	}
	attrs := []slog.Attr{slog.String("key_hash", keyHash(key))}
	scope, err := h.idem.ScopeV2(req, key)
	if err != nil {
		return Reply{Response: h.idem.AnswerV2(idem.Result{}, err), Outcome: idem.OutcomeRejected, Err: err, Attrs: attrs}
	}
	// Stop the work a little before Lambda's deadline, so a hung store
	// still ends in a 503 the client can act on, not a gateway timeout.
	// A lease, taken from this shorter deadline plus the store's margin,
	// still outlives the invocation.
	work, cancel := deadline.Before(ctx, DeadlineMargin)
	defer cancel()
	res, err := h.svc.Create(work, scope, decoded.cmd)
	return Reply{Response: h.idem.AnswerV2(res, err), Outcome: res.Outcome, Err: err, Attrs: attrs}
}

// keyHash identifies a key in logs without logging it: keys can carry
// client data, and a log is not a place for it.
func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}
