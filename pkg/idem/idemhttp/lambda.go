package idemhttp

import (
	"context"
	"errors"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// lambdaEvent is what the middleware's one flow for Lambda HTTP events
// (API Gateway payload 2.0 and 1.0, Application Load Balancer) needs of
// one kind of event: how to read a request, a handler's response, and how
// to answer.
type lambdaEvent[Req, Resp any] struct {
	// read reads a request as admit does; key is a key the handler
	// found elsewhere, "" for the header.
	read func(m *Middleware, req Req, key string) request
	// from reads a handler's response as the middleware stores it.
	from func(Resp) (response, error)
	// to renders a response (a stored one, or a problem) for req.
	to func(req Req, r response, replayed bool) Resp
}

// serve is the middleware around next for one kind of event: the
// prologue (admit), the handler run under the key (idem.Store.Run), and
// the answer: the handler's response, stored unless it asks for a retry;
// a replay; or a problem.
func serve[Req, Resp any](m *Middleware, ev lambdaEvent[Req, Resp], next func(context.Context, Req) (Resp, error)) func(context.Context, Req) (Resp, error) {
	return func(ctx context.Context, req Req) (Resp, error) {
		in := ev.read(m, req, "")
		if safeMethod(in.method) || (len(in.keys) == 0 && m.optional) {
			return next(ctx, req)
		}
		scope, fp, err := m.admit(in)
		if err != nil {
			return ev.answer(m, req, idem.Result{}, err), nil
		}
		var handlerErr error
		res, err := m.store.Run(ctx, scope, fp, func(ctx context.Context) (idem.Response, error) {
			out, err := next(ctx, req)
			if err != nil {
				handlerErr = err
				return idem.Response{}, err
			}
			resp, err := ev.from(out)
			if err != nil {
				return idem.Response{}, err
			}
			if !replayable(resp.status) {
				return idem.Response{}, &unstored{out: out}
			}
			return resp.stored(), nil
		}, m.call...)
		var us *unstored
		switch {
		case handlerErr != nil && err != nil:
			var none Resp
			return none, handlerErr
		case errors.As(err, &us):
			return us.out.(Resp), nil
		case errors.Is(err, idem.ErrNotRecorded) && res.Response.Status != 0:
			return ev.to(req, replayOf(res.Response), false), nil // the effect happened: say so
		}
		return ev.answer(m, req, res, err), nil
	}
}

// scope is the middleware's prologue for a handler that calls the store
// itself (ScopeV2, ScopeV1, ScopeALB): the key (key itself when the
// handler found it elsewhere), the caller, the scope; the fingerprint is
// the handler's own.
func (ev lambdaEvent[Req, Resp]) scope(m *Middleware, req Req, key string) (idem.Scope, error) {
	r := ev.read(m, req, key)
	r.body = nil
	scope, _, err := m.admit(r)
	return scope, err
}

// answer is the response to a request the middleware admitted and the
// store answered: the stored response, with Idempotent-Replayed: true on
// a replay, or the problem for err (AnswerV2, AnswerV1, AnswerALB too).
func (ev lambdaEvent[Req, Resp]) answer(m *Middleware, req Req, res idem.Result, err error) Resp {
	if err == nil {
		return ev.to(req, replayOf(res.Response), res.Outcome == idem.OutcomeReplayed)
	}
	return ev.to(req, m.problemOf(err).response(), false)
}

// APIGatewayV2Handler is an aws-lambda-go handler of API Gateway HTTP API
// (payload 2.0) requests.
type APIGatewayV2Handler func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// APIGatewayV2 wraps next, for lambda.Start. An error returned by next
// releases the key and goes back to the Lambda runtime unchanged.
func (m *Middleware) APIGatewayV2(next APIGatewayV2Handler) APIGatewayV2Handler {
	return serve(m, apiGatewayV2, next)
}

// ScopeV2 is the middleware's prologue for a handler that calls
// idem.Store.Execute or Transact itself, so that its DynamoDB writes
// commit with the key's completion: the key (key itself when the handler
// took it from elsewhere, such as the body; else the Idempotency-Key
// header), the caller under the middleware's policy, and the scope. Its
// error is for AnswerV2: 400, 403 or 500.
func (m *Middleware) ScopeV2(req events.APIGatewayV2HTTPRequest, key string) (idem.Scope, error) {
	return apiGatewayV2.scope(m, req, key)
}

// AnswerV2 is the API Gateway response to a call the handler made with
// ScopeV2's scope: the stored response (Idempotent-Replayed: true on a
// replay), or the problem for the error, ScopeV2's included.
func (m *Middleware) AnswerV2(res idem.Result, err error) events.APIGatewayV2HTTPResponse {
	return apiGatewayV2.answer(m, events.APIGatewayV2HTTPRequest{}, res, err)
}

// apiGatewayV2 is API Gateway's HTTP API payload 2.0.
var apiGatewayV2 = lambdaEvent[events.APIGatewayV2HTTPRequest, events.APIGatewayV2HTTPResponse]{
	read: func(m *Middleware, req events.APIGatewayV2HTTPRequest, key string) request {
		return m.requestV2(req, key)
	},
	from: fromAPIGatewayV2,
	to: func(_ events.APIGatewayV2HTTPRequest, r response, replayed bool) events.APIGatewayV2HTTPResponse {
		return toAPIGatewayV2(r, replayed)
	},
}
