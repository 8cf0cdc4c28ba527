package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/idemlambda/idemlambda/internal/deadline"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

// HeaderReplayed marks a response replayed from the idempotency store.
const HeaderReplayed = "Idempotent-Replayed"

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
	reject := func(p *Problem) (events.APIGatewayV2HTTPResponse, idem.Outcome, error) {
		return p.response(), "rejected", errors.New(p.Detail)
	}
	if m := req.RequestContext.HTTP.Method; m != "" && m != http.MethodPost {
		p := probMethod.with("use POST")
		p.headers = map[string]string{"Allow": http.MethodPost}
		return reject(&p)
	}
	if p := checkJSONContentType(req.Headers); p != nil {
		return reject(p)
	}
	body, p := readBody(req)
	if p != nil {
		return reject(p)
	}
	headerKey, hasHeader := header(req.Headers, HeaderIdempotencyKey)
	if hasHeader {
		k, err := ParseIdempotencyKey(headerKey)
		if err != nil {
			p := probKey.with(fmt.Sprintf("Idempotency-Key header: %v", err))
			return reject(&p)
		}
		headerKey = k
	}
	decoded, p := decodeCreate(body)
	if p != nil {
		return reject(p)
	}
	key := headerKey
	switch {
	case hasHeader && decoded.key != "" && decoded.key != headerKey:
		p := probKey.with("the Idempotency-Key header and the idempotency_key field differ; send one, or both equal")
		return reject(&p)
	case !hasHeader && decoded.key == "":
		p := probKey.with("send an Idempotency-Key header (or an idempotency_key field) with a unique value per operation")
		return reject(&p)
	case !hasHeader:
		key = decoded.key
	}
	*attrs = append(*attrs, slog.String("key_hash", keyHash(key)))
	cmd, err := product.NewCreateCommand(decoded.input)
	if err != nil { // decodeCreate already ran these rules; kept for safety
		p := probValidation.with(err.Error())
		return reject(&p)
	}

	principal, ok := Principal(req.RequestContext)
	if !ok {
		p := probForbidden.with("the token names no subject (sub, client_id or azp); keys are scoped to the caller")
		return reject(&p)
	}
	// Stop the work a little before Lambda's deadline, so a hung store
	// still ends in a 503 the client can act on, not a gateway timeout.
	// The lease, taken from this shorter deadline plus the store's
	// margin, still outlives the invocation.
	work, cancel := deadline.Before(ctx, DeadlineMargin)
	defer cancel()
	res, err := h.svc.Create(work, principal, key, cmd)
	if err != nil {
		return errorResponse(err)
	}
	out := fromIdem(res.Response)
	if res.Outcome == idem.OutcomeReplayed {
		out.Headers[HeaderReplayed] = "true"
	}
	return out, res.Outcome, nil
}

// errorResponse maps a use-case error to its problem.
func errorResponse(err error) (events.APIGatewayV2HTTPResponse, idem.Outcome, error) {
	var inflight *idem.InFlightError
	switch {
	case errors.As(err, &inflight):
		secs := int(math.Ceil(inflight.RetryAfter.Seconds()))
		p := probInFlight.with(fmt.Sprintf("an earlier request with this key holds it for up to %d more seconds; retry to get its response", max(1, secs))).retryAfter(secs)
		return p.response(), idem.OutcomeInFlight, err
	case errors.Is(err, idem.ErrLeaseLost):
		p := probInFlight.with("another request with this key took it over; retry to get its response").retryAfter(1)
		return p.response(), idem.OutcomeLeaseLost, err
	case errors.Is(err, idem.ErrKeyReuse):
		p := probKeyReuse.with("this idempotency key was used with a different request body; use a new key for a new request")
		return p.response(), idem.OutcomeKeyReuse, err
	case errors.Is(err, idem.ErrInvalidKey):
		p := probKey.with(err.Error())
		return p.response(), "rejected", err
	case errors.Is(err, idem.ErrConflict) || errors.Is(err, idem.ErrThrottled) || unavailable(err):
		p := probUnavailable.with("the data store is busy; retry with the same idempotency key").retryAfter(1)
		return p.response(), "unavailable", err
	default:
		p := probInternal.with("the request failed; retry with the same idempotency key, it is safe")
		return p.response(), idem.OutcomeError, err
	}
}

// fromIdem turns a stored response into an API Gateway response, copying
// the headers so a replay marker never leaks into the stored map.
func fromIdem(r idem.Response) events.APIGatewayV2HTTPResponse {
	h := make(map[string]string, len(r.Headers))
	for k, v := range r.Headers {
		h[k] = v
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: r.Status, Headers: h, Body: string(r.Body)}
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
