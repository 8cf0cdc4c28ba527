package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/idemlambda/idemlambda/internal/problem"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/internal/deadline"
	"github.com/idemlambda/idemlambda/internal/ids"
	"github.com/idemlambda/idemlambda/internal/sellers"
)

var probSellerNotFound = problem.New(http.StatusNotFound, "not-found", "Seller not found")

// SellerFinder finds seller statistics; *sellers.Reader is the one in use.
type SellerFinder interface {
	Get(ctx context.Context, id uuid.UUID) (sellers.Stats, error)
}

var _ SellerFinder = (*sellers.Reader)(nil)

// SellerHandler serves GET /sellers/{id}.
type SellerHandler struct {
	sellers SellerFinder
}

// NewSellerHandler returns the handler.
func NewSellerHandler(s SellerFinder) *SellerHandler { return &SellerHandler{sellers: s} }

// Serve answers one API Gateway request: 200 with the seller's count and
// one total per currency (pkg/money's JSON, sorted by currency), 404
// before the seller's first product, 400 for an id that is not a UUID.
func (h *SellerHandler) Serve(ctx context.Context, req events.APIGatewayV2HTTPRequest) Reply {
	if m := req.RequestContext.HTTP.Method; m != "" && m != http.MethodGet {
		p := methodNotAllowed(http.MethodGet)
		return fail(p, "", errors.New(p.Detail))
	}
	raw := req.PathParameters["id"]
	id, err := ids.Parse(raw)
	if err != nil {
		p := probBadRequest.WithDetail("the seller id must be a UUID such as 3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b")
		return fail(p, "", errors.New(p.Detail))
	}
	work, cancel := deadline.Before(ctx, DeadlineMargin)
	defer cancel()
	s, err := h.sellers.Get(work, id)
	switch {
	case errors.Is(err, sellers.ErrNotFound):
		return fail(probSellerNotFound.WithDetail("seller "+id.String()+" has no products yet"), "", nil)
	case err != nil:
		return fail(problem.For(err), "", err)
	}
	body, err := json.Marshal(s.Body())
	if err != nil {
		return fail(problem.For(err), "", err)
	}
	return Reply{Response: events.APIGatewayV2HTTPResponse{
		StatusCode: http.StatusOK,
		Headers:    map[string]string{"Content-Type": "application/json"},
		Body:       string(body),
	}}
}
