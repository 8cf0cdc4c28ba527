// Package httpadapter serves API Gateway HTTP API (payload format 2.0)
// Lambda handlers over net/http, so the local runner runs the functions'
// own handlers on a port, converting requests and responses the way API
// Gateway does, and giving each invocation an X-Ray trace header in its
// context the way Lambda does.
package httpadapter

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemlambda/idemlambda/internal/tracing"
)

// Handler is a Lambda handler for API Gateway HTTP API events.
type Handler func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// MaxBody is the largest body passed on; API Gateway's own limit is 10 MB
// and the handlers enforce far smaller ones, so more is never needed.
const MaxBody = 1 << 20

// Route binds a handler to a method and path pattern such as
// "/products/{id}"; path wildcards become PathParameters.
type Route struct {
	Method  string
	Pattern string
	Handler Handler
	// Authorizer is what the route's authorizer says of every request,
	// as API Gateway fills it in once its own check has passed; nil is a
	// route without one.
	Authorizer *events.APIGatewayV2HTTPRequestContextAuthorizerDescription
}

// New returns an http.Handler serving the routes. Anything else gets a
// problem+json 404, as API Gateway answers an unknown route.
func New(routes ...Route) http.Handler {
	mux := http.NewServeMux()
	ids := xray.NewIDGenerator()
	for _, r := range routes {
		mux.Handle(r.Method+" "+r.Pattern, serve(r, ids))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"type":"about:blank","title":"Not Found","status":404,"detail":"no route matches this method and path"}`)
	})
	return mux
}

func serve(route Route, ids *xray.IDGenerator) http.Handler {
	params := wildcards(route.Pattern)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := Request(r, route, params)
		if err != nil {
			http.Error(w, "cannot read request body", http.StatusBadRequest)
			return
		}
		resp, err := route.Handler(tracing.NewContext(r.Context(), traceHeader(r, ids)), req)
		if err != nil {
			// API Gateway's answer to a function error.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"message":"Internal Server Error"}`)
			return
		}
		Write(w, resp)
	})
}

// wildcards lists the {name} segments of a pattern.
func wildcards(pattern string) []string {
	var names []string
	for _, seg := range strings.Split(pattern, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			names = append(names, strings.TrimSuffix(strings.Trim(seg, "{}"), "..."))
		}
	}
	return names
}

// Request converts an HTTP request into the event API Gateway would send:
// lower-case header names, repeated headers joined with commas, cookies
// apart, binary bodies base64-encoded.
func Request(r *http.Request, route Route, params []string) (events.APIGatewayV2HTTPRequest, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return events.APIGatewayV2HTTPRequest{}, err
	}
	headers := make(map[string]string, len(r.Header))
	for k, vs := range r.Header {
		if strings.EqualFold(k, "Cookie") {
			continue
		}
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	var cookies []string
	for _, c := range r.Cookies() {
		cookies = append(cookies, c.String())
	}
	var pathParams map[string]string
	for _, name := range params {
		if pathParams == nil {
			pathParams = map[string]string{}
		}
		pathParams[name] = r.PathValue(name)
	}
	query := map[string]string{}
	for k, vs := range r.URL.Query() {
		query[k] = strings.Join(vs, ",")
	}
	sourceIP, _, _ := net.SplitHostPort(r.RemoteAddr)
	now := time.Now()
	req := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              route.Method + " " + route.Pattern,
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		PathParameters:        pathParams,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:  route.Method + " " + route.Pattern,
			Stage:     "$default",
			RequestID: requestID(),
			Time:      now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: sourceIP, UserAgent: r.UserAgent(),
			},
			Authorizer: route.Authorizer,
		},
	}
	if utf8.Valid(body) {
		req.Body = string(body)
	} else {
		req.Body = base64.StdEncoding.EncodeToString(body)
		req.IsBase64Encoded = true
	}
	return req, nil
}

// Write sends an API Gateway response.
func Write(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) {
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if b, err := base64.StdEncoding.DecodeString(resp.Body); err == nil {
			body = b
		}
	}
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// traceHeader is the trace header Lambda would give the invocation: the
// client's X-Amzn-Trace-Id when the X-Ray propagator can read it, so a
// caller can pick the id to follow, else a new sampled one, its ids made
// by X-Ray's ID generator and written by its propagator.
func traceHeader(r *http.Request, ids *xray.IDGenerator) string {
	ctx := r.Context()
	if h := r.Header.Get(tracing.HTTPHeader); trace.SpanContextFromContext(tracing.FromXRay(ctx, h)).IsValid() {
		return h
	}
	traceID, spanID := ids.NewIDs(ctx)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled})
	return tracing.XRayHeader(trace.ContextWithSpanContext(ctx, sc))
}

func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
