// Package sellershttp serves GET /sellers/{id}, the seller statistics'
// HTTP side: the statistics internal/sellers reads, as one API Gateway
// HTTP API handler on internal/api's plumbing (Reply, its decorators).
package sellershttp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/api"
	"github.com/idemlambda/idemlambda/internal/deadline"
	"github.com/idemlambda/idemlambda/internal/ids"
	"github.com/idemlambda/idemlambda/internal/problem"
	"github.com/idemlambda/idemlambda/internal/sellers"
)

var probNotFound = problem.Kind{Status: http.StatusNotFound, Name: "not-found", Title: "Seller not found"}

// Finder finds seller statistics; *sellers.Reader is the one in use.
type Finder interface {
	Get(ctx context.Context, id uuid.UUID) (sellers.Stats, error)
}

var _ Finder = (*sellers.Reader)(nil)

// Handler serves GET /sellers/{id}.
type Handler struct {
	sellers Finder
}

// NewHandler returns the handler.
func NewHandler(s Finder) *Handler { return &Handler{sellers: s} }

// Serve answers one API Gateway request: 200 with the seller's count and
// one total per currency (pkg/money's JSON, sorted by currency), 404
// before the seller's first product, 400 for an id that is not a UUID,
// 403 for a request no authorizer names a caller for, or whose token
// does not list the seller (an IAM caller's route policy decides which
// sellers it reads: internal/access).
func (h *Handler) Serve(ctx context.Context, req events.APIGatewayV2HTTPRequest) api.Reply {
	if m := req.RequestContext.HTTP.Method; m != "" && m != http.MethodGet {
		p := problem.MethodNotAllowed(http.MethodGet)
		return fail(p, errors.New(p.Detail))
	}
	caller, err := access.FromRequestV2(req.RequestContext)
	if err != nil {
		p, _ := api.Refusal(err)
		return fail(p, err)
	}
	raw := req.PathParameters["id"]
	id, err := ids.Parse(raw)
	if err != nil {
		p := problem.BadRequest.WithDetail("the seller id must be a UUID such as 3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b")
		return fail(p, errors.New(p.Detail))
	}
	if err := caller.VouchesFor(id); err != nil {
		p, _ := api.Refusal(err)
		return fail(p, err)
	}
	work, cancel := deadline.Before(ctx, api.DeadlineMargin)
	defer cancel()
	s, err := h.sellers.Get(work, id)
	switch {
	case errors.Is(err, sellers.ErrNotFound):
		return fail(probNotFound.WithDetail("seller "+id.String()+" has no products yet"), nil)
	case err != nil:
		return fail(problem.For(err), err)
	}
	body, err := json.Marshal(s.Body())
	if err != nil {
		return fail(problem.For(err), err)
	}
	return api.Reply{Response: events.APIGatewayV2HTTPResponse{
		StatusCode: http.StatusOK,
		Headers:    map[string]string{"Content-Type": "application/json"},
		Body:       string(body),
	}}
}

// fail is the Reply of a request answered with a problem; err, when not
// nil, is logged.
func fail(p problem.Problem, err error) api.Reply {
	return api.Reply{Response: p.APIGatewayV2(), Err: err}
}
