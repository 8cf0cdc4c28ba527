package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/idemlambda/idemlambda/internal/problem"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/internal/access"
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

// Creator creates products idempotently for a caller; *ProductCreator is
// the one in use. The handler depends on no more than this, so its
// answers can be tested without a store.
type Creator interface {
	Create(ctx context.Context, scope idem.Scope, caller access.Caller, cmd product.CreateCommand) (idem.Result, error)
}

var _ Creator = (*ProductCreator)(nil)

// ProductCreator makes product creation idempotent: once per (principal,
// key) scope, the product's writes commit in one TransactWriteItems with
// the key's completion, and every retry gets the first 201 back. The
// caller's grant of the seller and its limit (internal/access) are
// conditions of that same transaction.
type ProductCreator struct {
	execute  Executor
	products *product.Service
	guard    *access.Guard
}

// Executor runs an operation once per scope: an idempotency store's
// Execute (claim first, then commit) or Transact (claim and commit in one
// transaction), as the function's configuration chooses.
type Executor func(ctx context.Context, scope idem.Scope, fingerprint string, fn func(context.Context) (idem.Effect, error), opts ...idem.CallOption) (idem.Result, error)

// NewProductCreator returns a ProductCreator claiming its keys with
// execute, its callers checked by guard.
func NewProductCreator(execute Executor, products *product.Service, guard *access.Guard) (*ProductCreator, error) {
	if execute == nil || products == nil || guard == nil {
		return nil, errors.New("api: product creation needs an idempotency store's Execute or Transact, the product service and the callers' guard")
	}
	return &ProductCreator{execute: execute, products: products, guard: guard}, nil
}

// Create creates the product once per scope (the store's Execute owns the
// claim, the replay and the release on failure), for caller, recording
// the scope's principal as the product's creator. The Result's response
// is the 201, fresh or replayed byte for byte. Errors wrap
// idem.ErrInFlight, idem.ErrKeyReuse, idem.ErrLeaseLost,
// idem.ErrInvalidKey, the refusals of internal/access
// (access.ErrSellerForbidden, access.ErrLimited: nothing was written, and
// the key is free for a retry) or the infrastructure error.
func (c *ProductCreator) Create(ctx context.Context, scope idem.Scope, caller access.Caller, cmd product.CreateCommand) (idem.Result, error) {
	// A token that does not list the seller, or a caller this process
	// knows to be over its limit: refused before any DynamoDB call, and
	// before the key is claimed.
	if err := c.guard.Admit(caller, cmd.SellerID()); err != nil {
		return idem.Result{Outcome: idem.OutcomeRejected}, err
	}
	fp, err := Fingerprint(cmd)
	if err != nil {
		return idem.Result{Outcome: idem.OutcomeError}, err
	}
	var check access.Check
	own := 0 // the product's own writes, before the check's
	res, err := c.execute(ctx, scope, fp, func(ctx context.Context) (idem.Effect, error) {
		created, err := c.products.Create(ctx, cmd.By(scope.Principal))
		if err != nil {
			return idem.Effect{}, err
		}
		// The caller's grant and its window's count are conditions of
		// the product's own transaction: never checked, then written,
		// and never counted for a replay, whose transaction never lands.
		check, own = c.guard.Check(caller, cmd.SellerID()), len(created.Writes)
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
		return idem.Effect{Response: resp, Writes: append(created.Writes, check.Writes...)}, nil
	})
	if err == nil && (res.Outcome == idem.OutcomeExecuted || res.Outcome == idem.OutcomeTakeover) {
		check.Committed()
	}
	if i, ok := idem.FailedWrite(err); ok {
		if refused := check.Refused(i - own); refused != nil {
			// The transaction wrote nothing, and the key was released
			// (reserve) or never claimed (transact).
			return idem.Result{Outcome: idem.OutcomeRejected}, fmt.Errorf("%w (%w)", refused, err)
		}
	}
	return res, err
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
	// itself: the key, the caller under its principal policy, the scope,
	// and the answers.
	idem *idemhttp.Middleware
}

// NewCreateHandler returns the handler of svc, whose calls go to store.
// Every caller must be authenticated: a request that reaches it without
// an authorizer (a route that lost its IAM or JWT authorizer) names no
// caller (access.FromRequestV2) and is refused with a 403 problem before
// its scope is made, never served in one anonymous scope shared by every
// caller, where one replays another's product and uses up its keys. The
// middleware names the scope's principal from the same authorizer, and
// never chooses the anonymous scope (no idemhttp.WithAnonymous).
func NewCreateHandler(svc Creator, store *idem.Store) (*CreateHandler, error) {
	mw, err := idemhttp.New(store, idemhttp.WithOperation(OperationCreateProduct), idemhttp.WithProblemTypeBase(problem.TypeBase))
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
	caller, err := access.FromRequestV2(req.RequestContext)
	if err != nil {
		p, _ := Refusal(err)
		return Reply{Response: p.APIGatewayV2(), Outcome: idem.OutcomeRejected, Err: err}
	}
	scope, err := h.idem.ScopeV2(req, key)
	if err != nil {
		return Reply{Response: h.idem.AnswerV2(idem.Result{}, err), Outcome: idem.OutcomeRejected, Err: err}
	}
	// Stop the work a little before Lambda's deadline, so a hung store
	// still ends in a 503 the client can act on, not a gateway timeout.
	// A lease, taken from this shorter deadline plus the store's margin,
	// still outlives the invocation.
	work, cancel := deadline.Before(ctx, DeadlineMargin)
	defer cancel()
	res, err := h.svc.Create(work, scope, caller, decoded.cmd)
	if p, refused := Refusal(err); refused {
		return Reply{Response: p.APIGatewayV2(), Outcome: idem.OutcomeRejected, Err: err}
	}
	resp := h.idem.AnswerV2(res, err)
	var attrs []slog.Attr
	if id, ok := strings.CutPrefix(resp.Headers["Location"], "/products/"); ok {
		// Who created (or was replayed) which product: the request's
		// line names the caller, this names the product.
		attrs = append(attrs, slog.String("product_id", id))
	}
	return Reply{Response: resp, Outcome: res.Outcome, Err: err, Attrs: attrs}
}
