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

	"github.com/idemlambda/idemlambda/internal/deadline"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// DeadlineMargin is how long before the invocation's deadline a handler
// stops waiting on the store and answers 503.
const DeadlineMargin = time.Second

// Creator creates products; *product.Service is the one in use. The
// handler depends on no more than this, so its answers can be tested
// without a store.
type Creator interface {
	Create(ctx context.Context, principal, key string, cmd product.CreateCommand) (idem.Result, error)
}

var _ Creator = (*product.Service)(nil)

// CreateHandler serves POST /products.
type CreateHandler struct {
	svc Creator
}

// NewCreateHandler returns the handler.
func NewCreateHandler(svc Creator) *CreateHandler { return &CreateHandler{svc: svc} }

// Serve answers one API Gateway request.
func (h *CreateHandler) Serve(ctx context.Context, req events.APIGatewayV2HTTPRequest) Reply {
	reject := func(p idemhttp.Problem) Reply { return fail(p, idem.OutcomeRejected, errors.New(p.Detail)) }
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
	attrs := []slog.Attr{slog.String("key_hash", keyHash(key))}
	principal, err := idemhttp.PrincipalV2(req.RequestContext)
	if err != nil {
		r := fail(idemhttp.ProblemFor(err), idem.OutcomeRejected, err)
		r.Attrs = attrs
		return r
	}
	// Stop the work a little before Lambda's deadline, so a hung store
	// still ends in a 503 the client can act on, not a gateway timeout.
	// A lease, taken from this shorter deadline plus the store's margin,
	// still outlives the invocation.
	work, cancel := deadline.Before(ctx, DeadlineMargin)
	defer cancel()
	res, err := h.svc.Create(work, principal, key, decoded.cmd)
	r := Reply{Outcome: res.Outcome, Err: err, Attrs: attrs}
	if err != nil {
		r.Response = idemhttp.ProblemFor(err).APIGatewayV2()
	} else {
		r.Response = idemhttp.ToAPIGatewayV2(res.Response, res.Outcome == idem.OutcomeReplayed)
	}
	return r
}

// keyHash identifies a key in logs without logging it: keys can carry
// client data, and a log is not a place for it.
func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}
