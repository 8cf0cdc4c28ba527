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
	"github.com/idemlambda/idemlambda/internal/product"
)

// Finder finds products by id; *product.Reader is the one in use.
type Finder interface {
	Get(ctx context.Context, id uuid.UUID) (product.Product, error)
}

var _ Finder = (*product.Reader)(nil)

// GetHandler serves GET /products/{id}.
type GetHandler struct {
	products Finder
}

// NewGetHandler returns the handler.
func NewGetHandler(products Finder) *GetHandler { return &GetHandler{products: products} }

// Serve answers one API Gateway request.
func (h *GetHandler) Serve(ctx context.Context, req events.APIGatewayV2HTTPRequest) Reply {
	resp, err := h.get(ctx, req)
	return Reply{Response: resp, Err: err}
}

func (h *GetHandler) get(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	if m := req.RequestContext.HTTP.Method; m != "" && m != http.MethodGet {
		p := methodNotAllowed(http.MethodGet)
		return respond(p), errors.New(p.Detail)
	}
	raw := req.PathParameters["id"]
	id, err := ids.Parse(raw)
	if err != nil {
		p := probBadRequest.WithDetail("the product id must be a UUID such as 3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b")
		return respond(p), errors.New(p.Detail)
	}
	work, cancel := deadline.Before(ctx, DeadlineMargin)
	defer cancel()
	p, err := h.products.Get(work, id)
	switch {
	case errors.Is(err, product.ErrNotFound):
		return respond(probNotFound.WithDetail("no product has id " + id.String())), nil
	case err != nil:
		// 503 when the store is unavailable, else 500 without detail.
		return respond(problem.For(err)), err
	}
	body, err := json.Marshal(newProductBody(p))
	if err != nil {
		return respond(problem.For(err)), err
	}
	return events.APIGatewayV2HTTPResponse{
		StatusCode: http.StatusOK,
		Headers:    map[string]string{"Content-Type": "application/json"},
		Body:       string(body),
	}, nil
}
