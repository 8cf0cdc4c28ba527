package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/internal/deadline"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// GetHandler serves GET /products/{id}.
type GetHandler struct {
	reader *product.Reader
	log    *slog.Logger
	now    func() time.Time
}

// NewGetHandler returns the handler.
func NewGetHandler(reader *product.Reader, log *slog.Logger) *GetHandler {
	return &GetHandler{reader: reader, log: log, now: time.Now}
}

// Handle answers one API Gateway request; like CreateHandler.Handle it
// never returns an error.
func (h *GetHandler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	start := h.now()
	resp, err := h.handle(ctx, req)
	logRequest(ctx, h.log, "get product", requestAttrs(ctx, req), resp.StatusCode, h.now().Sub(start), err)
	return resp, nil
}

func (h *GetHandler) handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	if m := req.RequestContext.HTTP.Method; m != "" && m != http.MethodGet {
		p := methodNotAllowed(http.MethodGet)
		return respond(p), errors.New(p.Detail)
	}
	raw := req.PathParameters["id"]
	id, err := uuid.Parse(raw)
	if err != nil || len(raw) != 36 {
		p := probBadRequest.WithDetail("the product id must be a UUID such as 3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b")
		return respond(p), errors.New(p.Detail)
	}
	work, cancel := deadline.Before(ctx, DeadlineMargin)
	defer cancel()
	p, err := h.reader.Get(work, id)
	switch {
	case errors.Is(err, product.ErrNotFound):
		return respond(probNotFound.WithDetail("no product has id " + id.String())), nil
	case err != nil:
		// 503 when the store is unavailable, else 500 without detail.
		return respond(idemhttp.ProblemFor(err)), err
	}
	body, err := json.Marshal(p.Body())
	if err != nil {
		return respond(idemhttp.ProblemFor(err)), err
	}
	return events.APIGatewayV2HTTPResponse{
		StatusCode: http.StatusOK,
		Headers:    map[string]string{"Content-Type": "application/json"},
		Body:       string(body),
	}, nil
}
