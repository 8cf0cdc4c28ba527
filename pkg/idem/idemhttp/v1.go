package idemhttp

import (
	"context"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// APIGatewayV1Handler is an aws-lambda-go handler of API Gateway REST API
// proxy requests (payload 1.0, which HTTP APIs can send too).
type APIGatewayV1Handler func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)

// APIGatewayV1 wraps next, for lambda.Start: APIGatewayV2's middleware
// for API Gateway REST APIs (payload 1.0). The caller is PrincipalV1's
// (or WithPrincipalV1's); the operation by default the method and the
// API's resource ("POST /orders/{id}"); a response's cookies go out in
// its multi-value Set-Cookie.
func (m *Middleware) APIGatewayV1(next APIGatewayV1Handler) APIGatewayV1Handler {
	return serve(m, apiGatewayV1, next)
}

// ScopeV1 is ScopeV2 for a REST API request.
func (m *Middleware) ScopeV1(req events.APIGatewayProxyRequest, key string) (idem.Scope, error) {
	return apiGatewayV1.scope(m, req, key)
}

// AnswerV1 is AnswerV2 for a REST API request.
func (m *Middleware) AnswerV1(res idem.Result, err error) events.APIGatewayProxyResponse {
	return apiGatewayV1.answer(m, events.APIGatewayProxyRequest{}, res, err)
}

// FromAPIGatewayV1 is FromAPIGatewayV2 for a REST API handler's response.
func FromAPIGatewayV1(r events.APIGatewayProxyResponse) (idem.Response, error) {
	resp, err := fromEvent(r.StatusCode, r.Headers, r.MultiValueHeaders, nil, r.Body, r.IsBase64Encoded)
	if err != nil {
		return idem.Response{}, err
	}
	return resp.stored(), nil
}

// ToAPIGatewayV1 is ToAPIGatewayV2 for a REST API: cookies go out in the
// multi-value Set-Cookie.
func ToAPIGatewayV1(r idem.Response, replayed bool) events.APIGatewayProxyResponse {
	return toAPIGatewayV1(replayOf(r), replayed)
}

func toAPIGatewayV1(r response, replayed bool) events.APIGatewayProxyResponse {
	out := rendered(r, replayed)
	resp := events.APIGatewayProxyResponse{StatusCode: r.status, Headers: out.headers, Body: out.body, IsBase64Encoded: out.base64}
	if len(out.cookies) > 0 {
		resp.MultiValueHeaders = map[string][]string{headerSetCookie: out.cookies}
	}
	return resp
}

// apiGatewayV1 is API Gateway's payload 1.0.
var apiGatewayV1 = lambdaEvent[events.APIGatewayProxyRequest, events.APIGatewayProxyResponse]{
	read: func(m *Middleware, req events.APIGatewayProxyRequest, key string) request {
		operation := m.operation
		if operation == "" {
			operation = req.HTTPMethod + " " + req.Resource
		}
		return m.requestEvent(key, operation, req.HTTPMethod, req.Path, req.Headers, req.MultiValueHeaders,
			req.QueryStringParameters, req.MultiValueQueryStringParameters, req.Body, req.IsBase64Encoded,
			func() (string, error) { return m.callerV1(req.RequestContext) })
	},
	from: func(r events.APIGatewayProxyResponse) (response, error) {
		return fromEvent(r.StatusCode, r.Headers, r.MultiValueHeaders, nil, r.Body, r.IsBase64Encoded)
	},
	to: func(_ events.APIGatewayProxyRequest, r response, replayed bool) events.APIGatewayProxyResponse {
		return toAPIGatewayV1(r, replayed)
	},
}

// callerV1 names a REST API request's caller under the middleware's
// policy (fromAuthorizer).
func (m *Middleware) callerV1(rc events.APIGatewayProxyRequestContext) (string, error) {
	var custom func() (string, error)
	if m.principalV1 != nil {
		custom = func() (string, error) { return m.principalV1(rc) }
	}
	return m.fromAuthorizer(custom, func() (string, error) { return PrincipalV1(rc) }, "WithPrincipalV1")
}

// requestEvent reads a request of payload 1.0's shape (API Gateway REST
// APIs, load balancers): single- and multi-value headers and query
// parameters, a body that may be base64.
func (m *Middleware) requestEvent(key, operation, method, path string, headers map[string]string, multi map[string][]string,
	query map[string]string, multiQuery map[string][]string, body string, isBase64 bool, principal func() (string, error)) request {
	return request{
		keys: headerValues(headers, multi, HeaderKey), key: key, operation: operation,
		principal: principal,
		body:      func() ([]byte, error) { return m.eventBody(body, isBase64) },
		method:    method, path: path, query: queryOf(query, multiQuery),
		header: func(name string) (string, bool) {
			vs := headerValues(headers, multi, name)
			return strings.Join(vs, ", "), len(vs) > 0
		},
	}
}

// headerValues returns a header's values by case-insensitive name: the
// multi-value map's when it has the header, else the single-value map's.
func headerValues(single map[string]string, multi map[string][]string, name string) []string {
	var vs []string
	for k, v := range multi {
		if strings.EqualFold(k, name) {
			vs = append(vs, v...)
		}
	}
	if len(vs) > 0 {
		return vs
	}
	for k, v := range single {
		if strings.EqualFold(k, name) {
			vs = append(vs, v)
		}
	}
	return vs
}

// queryOf is a request's query parameters as one string, sorted by name,
// for the fingerprint: the multi-value map's when there is one.
func queryOf(single map[string]string, multi map[string][]string) string {
	q := url.Values{}
	for k, vs := range multi {
		q[k] = append(q[k], vs...)
	}
	if len(q) == 0 {
		for k, v := range single {
			q.Set(k, v)
		}
	}
	return q.Encode()
}
