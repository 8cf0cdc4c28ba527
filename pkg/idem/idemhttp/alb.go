package idemhttp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemprincipal"
)

// ALBHandler is an aws-lambda-go handler of Application Load Balancer
// requests (a Lambda target group).
type ALBHandler func(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error)

// ALB wraps next, for lambda.Start: APIGatewayV2's middleware for an
// Application Load Balancer's Lambda target group. A load balancer
// authenticates nobody, so the caller is WithPrincipalALB's (or, with
// WithAnonymous, the anonymous scope); without either every protected
// request gets a 500. The operation is by default the method and the
// path. A target group with multi-value headers gets its answers in
// them; without, a response carries one Set-Cookie (the last), as the
// load balancer allows.
func (m *Middleware) ALB(next ALBHandler) ALBHandler {
	return serve(m, alb, next)
}

// ScopeALB is ScopeV2 for a load balancer's request.
func (m *Middleware) ScopeALB(req events.ALBTargetGroupRequest, key string) (idem.Scope, error) {
	return alb.scope(m, req, key)
}

// AnswerALB is AnswerV2 for req, a load balancer's request (whose
// headers say whether the answer's are multi-value).
func (m *Middleware) AnswerALB(req events.ALBTargetGroupRequest, res idem.Result, err error) events.ALBTargetGroupResponse {
	return alb.answer(m, req, res, err)
}

// FromALB is FromAPIGatewayV2 for a load balancer handler's response.
func FromALB(r events.ALBTargetGroupResponse) (idem.Response, error) {
	resp, err := fromEvent(r.StatusCode, r.Headers, r.MultiValueHeaders, nil, r.Body, r.IsBase64Encoded)
	if err != nil {
		return idem.Response{}, err
	}
	return resp.stored(), nil
}

// ToALB is ToAPIGatewayV2 for a load balancer: in MultiValueHeaders when
// multiValue (the target group's setting, which its requests show),
// else in Headers with one Set-Cookie, the last.
func ToALB(r idem.Response, replayed, multiValue bool) events.ALBTargetGroupResponse {
	return toALB(replayOf(r), replayed, multiValue)
}

func toALB(r response, replayed, multiValue bool) events.ALBTargetGroupResponse {
	out := rendered(r, replayed)
	resp := events.ALBTargetGroupResponse{
		StatusCode: r.status, StatusDescription: strconv.Itoa(r.status) + " " + http.StatusText(r.status),
		Body: out.body, IsBase64Encoded: out.base64,
	}
	if !multiValue {
		resp.Headers = out.headers
		if n := len(out.cookies); n > 0 {
			resp.Headers[headerSetCookie] = out.cookies[n-1]
		}
		return resp
	}
	resp.MultiValueHeaders = make(map[string][]string, len(out.headers)+1)
	for k, v := range out.headers {
		resp.MultiValueHeaders[k] = []string{v}
	}
	if len(out.cookies) > 0 {
		resp.MultiValueHeaders[headerSetCookie] = out.cookies
	}
	return resp
}

// alb is an Application Load Balancer's Lambda target group event.
var alb = lambdaEvent[events.ALBTargetGroupRequest, events.ALBTargetGroupResponse]{
	read: func(m *Middleware, req events.ALBTargetGroupRequest, key string) request {
		operation := m.operation
		if operation == "" {
			operation = req.HTTPMethod + " " + req.Path
		}
		var custom func() (string, error)
		if m.principalALB != nil {
			custom = func() (string, error) { return m.principalALB(req) }
		}
		return m.requestEvent(key, operation, req.HTTPMethod, req.Path, req.Headers, req.MultiValueHeaders,
			req.QueryStringParameters, req.MultiValueQueryStringParameters, req.Body, req.IsBase64Encoded,
			func() (string, error) { return m.fromFunc(custom, "WithPrincipalALB") })
	},
	from: func(r events.ALBTargetGroupResponse) (response, error) {
		return fromEvent(r.StatusCode, r.Headers, r.MultiValueHeaders, nil, r.Body, r.IsBase64Encoded)
	},
	to: func(req events.ALBTargetGroupRequest, r response, replayed bool) events.ALBTargetGroupResponse {
		return toALB(r, replayed, len(req.MultiValueHeaders) > 0)
	},
}

// The headers a load balancer's authenticate-oidc (or -cognito) action
// adds to the requests it forwards.
const (
	headerOIDCIdentity = "X-Amzn-Oidc-Identity"
	headerOIDCData     = "X-Amzn-Oidc-Data"
)

// PrincipalALBOIDC names the caller of a load balancer request that a
// listener rule authenticated with OIDC or Amazon Cognito: the issuer of
// the user claims token the load balancer signed (x-amzn-oidc-data) and
// the subject it names (x-amzn-oidc-identity), spelled as
// idemprincipal.JWT, so one user has one principal whichever way in they
// come through. A request without them is idemprincipal.ErrNoSubject, a
// 403.
//
// Use it only for a target group that every listener rule forwarding to
// it authenticates: the load balancer replaces these headers on the
// requests it authenticates, and passes a client's own on the requests
// it does not. It does not verify the token's signature (the load
// balancer's public key is fetched per key id from a regional endpoint);
// verify it in PrincipalALB's function of your own where a rule might
// not authenticate.
func PrincipalALBOIDC(req events.ALBTargetGroupRequest) (string, error) {
	subs := headerValues(req.Headers, req.MultiValueHeaders, headerOIDCIdentity)
	data := headerValues(req.Headers, req.MultiValueHeaders, headerOIDCData)
	if len(subs) != 1 || subs[0] == "" || len(data) != 1 {
		return "", fmt.Errorf("%w: no single %s and %s header (is the listener rule authenticating?)", idemprincipal.ErrNoSubject, headerOIDCIdentity, headerOIDCData)
	}
	parts := strings.Split(data[0], ".")
	if len(parts) != 3 {
		return "", fmt.Errorf("%w: %s is not a JWT", idemprincipal.ErrNoSubject, headerOIDCData)
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return "", fmt.Errorf("%w: %s's claims do not decode: %w", idemprincipal.ErrNoSubject, headerOIDCData, err)
	}
	var claims struct {
		Iss string `json:"iss"`
		Sub string `json:"sub"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return "", fmt.Errorf("%w: %s's claims are not JSON: %w", idemprincipal.ErrNoSubject, headerOIDCData, err)
	}
	if claims.Sub != "" && claims.Sub != subs[0] {
		return "", fmt.Errorf("%w: %s and %s name two subjects", idemprincipal.ErrNoSubject, headerOIDCIdentity, headerOIDCData)
	}
	return idemprincipal.FromClaims(func(claim string) string {
		switch claim {
		case "iss":
			return claims.Iss
		case "sub":
			return subs[0]
		}
		return ""
	})
}
