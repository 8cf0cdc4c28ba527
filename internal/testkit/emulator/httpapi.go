package emulator

import (
	"fmt"
	"sort"
	"strings"
)

// API is what an HTTP API's OpenAPI Body defines: its routes and the
// authorizers they use.
type API struct {
	// Routes are sorted by route key.
	Routes []Route
	// Authorizers are the ones a route uses, sorted by name.
	Authorizers []Authorizer
}

// Route is one route of an HTTP API.
type Route struct {
	// Key is the route key, "POST /products".
	Key string
	// Integration is its Lambda proxy integration.
	Integration Integration
	// AuthorizationType is NONE, AWS_IAM, JWT or CUSTOM (a Lambda
	// authorizer), as CreateRoute takes it.
	AuthorizationType string
	// Authorizer names the route's JWT or Lambda authorizer (in
	// API.Authorizers), and Scopes are the JWT scopes it requires.
	Authorizer string
	Scopes     []string
}

// Integration is a route's Lambda proxy integration
// (x-amazon-apigateway-integration of type aws_proxy).
type Integration struct {
	// URI is the function's invocation URI, as the Body gives it.
	URI string
	// Method is the integration's HTTP method (POST for Lambda).
	Method string
	// PayloadFormatVersion is 1.0 or 2.0.
	PayloadFormatVersion string
	// TimeoutMillis is the integration timeout; 0 leaves the default.
	TimeoutMillis int
}

// Authorizer is a JWT or Lambda (REQUEST) authorizer of an HTTP API.
type Authorizer struct {
	// Name is the security scheme's name in the Body.
	Name string
	// Type is JWT or REQUEST, as CreateAuthorizer takes it.
	Type string
	// IdentitySource is where the identity is read from
	// ($request.header.Authorization, ...).
	IdentitySource []string
	// Issuer and Audience are a JWT authorizer's.
	Issuer   string
	Audience []string
	// URI, PayloadFormatVersion, SimpleResponses and ResultTTLSeconds are a
	// Lambda authorizer's.
	URI                  string
	PayloadFormatVersion string
	SimpleResponses      bool
	ResultTTLSeconds     int
}

// methods maps the OpenAPI operation keys to route methods.
var methods = map[string]string{
	"get": "GET", "put": "PUT", "post": "POST", "delete": "DELETE", "options": "OPTIONS",
	"head": "HEAD", "patch": "PATCH", "x-amazon-apigateway-any-method": "ANY",
}

// HTTPAPI reads an HTTP API's OpenAPI Body, its intrinsic functions already
// resolved (Stack.Resolve). Whatever API Gateway would read from it that
// HTTPAPI does not turn into a route, an integration or an authorizer (CORS,
// an HTTP integration, request parameters, an unknown extension) is an
// error, so the routes created from it are the Body's, or there are none.
func HTTPAPI(body map[string]any) (API, error) {
	for k := range body {
		switch k {
		case "openapi", "info", "paths", "components", "security", "tags":
		default:
			return API{}, fmt.Errorf("%w: the Body's %q", ErrUnsupported, k)
		}
	}
	schemes, _ := pathOf(body, "components", "securitySchemes").(map[string]any)
	for k := range asMap(body["components"]) {
		if k != "securitySchemes" {
			return API{}, fmt.Errorf("%w: the Body's components.%s", ErrUnsupported, k)
		}
	}
	defaultSecurity, hasDefault := body["security"]
	paths, ok := body["paths"].(map[string]any)
	if !ok || len(paths) == 0 {
		return API{}, fmt.Errorf("emulator: the Body has no paths")
	}
	var api API
	used := map[string]Authorizer{}
	for path, rawItem := range paths {
		item, ok := rawItem.(map[string]any)
		if !ok {
			return API{}, fmt.Errorf("emulator: path %s: not a mapping", path)
		}
		for key, rawOp := range item {
			if key == "parameters" {
				continue
			}
			method, ok := methods[key]
			if !ok {
				return API{}, fmt.Errorf("%w: %q under path %s", ErrUnsupported, key, path)
			}
			routeKey := method + " " + path
			op, ok := rawOp.(map[string]any)
			if !ok {
				return API{}, fmt.Errorf("emulator: %s: not a mapping", routeKey)
			}
			r, err := route(routeKey, op)
			if err != nil {
				return API{}, err
			}
			security, has := op["security"]
			if !has && hasDefault {
				security, has = defaultSecurity, true
			}
			if has {
				auth, err := authorization(routeKey, security, schemes)
				if err != nil {
					return API{}, err
				}
				r.AuthorizationType, r.Scopes = auth.kind, auth.scopes
				if auth.authorizer != nil {
					r.Authorizer = auth.authorizer.Name
					used[auth.authorizer.Name] = *auth.authorizer
				}
			}
			api.Routes = append(api.Routes, r)
		}
	}
	sort.Slice(api.Routes, func(i, j int) bool { return api.Routes[i].Key < api.Routes[j].Key })
	for _, a := range used {
		api.Authorizers = append(api.Authorizers, a)
	}
	sort.Slice(api.Authorizers, func(i, j int) bool { return api.Authorizers[i].Name < api.Authorizers[j].Name })
	return api, nil
}

func route(key string, op map[string]any) (Route, error) {
	r := Route{Key: key, AuthorizationType: "NONE"}
	for k := range op {
		switch k {
		case "x-amazon-apigateway-integration", "security", "responses", "parameters", "summary", "description", "operationId":
		default:
			return Route{}, fmt.Errorf("%w: %s's %q", ErrUnsupported, key, k)
		}
	}
	in, ok := op["x-amazon-apigateway-integration"].(map[string]any)
	if !ok {
		return Route{}, fmt.Errorf("emulator: %s has no x-amazon-apigateway-integration", key)
	}
	for k, v := range in {
		var ok bool
		switch k {
		case "type":
			ok = v == "aws_proxy"
		case "uri":
			r.Integration.URI, ok = v.(string)
		case "httpMethod":
			r.Integration.Method, ok = v.(string)
		case "payloadFormatVersion":
			r.Integration.PayloadFormatVersion, ok = v.(string)
		case "timeoutInMillis":
			r.Integration.TimeoutMillis, ok = integer(v)
		default:
			return Route{}, fmt.Errorf("%w: %s's integration %q", ErrUnsupported, key, k)
		}
		if !ok {
			return Route{}, fmt.Errorf("%w: %s's integration %s %v (a Lambda proxy integration is)", ErrUnsupported, key, k, v)
		}
	}
	if r.Integration.URI == "" || r.Integration.Method == "" {
		return Route{}, fmt.Errorf("emulator: %s's integration has no uri or httpMethod", key)
	}
	if r.Integration.PayloadFormatVersion == "" {
		r.Integration.PayloadFormatVersion = "1.0" // API Gateway's default
	}
	return r, nil
}

type auth struct {
	kind       string
	authorizer *Authorizer
	scopes     []string
}

// authorization reads a route's security requirement: none ([]), or one
// scheme of the Body's securitySchemes.
func authorization(key string, security any, schemes map[string]any) (auth, error) {
	reqs, ok := security.([]any)
	if !ok {
		return auth{}, fmt.Errorf("emulator: %s: security %v is not a list", key, security)
	}
	switch len(reqs) {
	case 0:
		return auth{kind: "NONE"}, nil
	case 1:
	default:
		return auth{}, fmt.Errorf("%w: %s has %d alternative security requirements", ErrUnsupported, key, len(reqs))
	}
	req, ok := reqs[0].(map[string]any)
	if !ok || len(req) != 1 {
		return auth{}, fmt.Errorf("%w: %s's security requirement %v (one scheme is)", ErrUnsupported, key, reqs[0])
	}
	var name string
	for k := range req {
		name = k // the one scheme
	}
	rawScopes := req[name]
	var scopes []string
	for _, s := range asList(rawScopes) {
		str, ok := s.(string)
		if !ok {
			return auth{}, fmt.Errorf("emulator: %s: scope %v is not a string", key, s)
		}
		scopes = append(scopes, str)
	}
	scheme, ok := schemes[name].(map[string]any)
	if !ok {
		return auth{}, fmt.Errorf("emulator: %s: security scheme %s is not in components.securitySchemes", key, name)
	}
	if scheme["x-amazon-apigateway-authtype"] == "awsSigv4" {
		return auth{kind: "AWS_IAM"}, nil
	}
	a, err := authorizer(name, scheme)
	if err != nil {
		return auth{}, fmt.Errorf("%s: %w", key, err)
	}
	kind := "JWT"
	if a.Type == "REQUEST" {
		kind = "CUSTOM"
	}
	return auth{kind: kind, authorizer: &a, scopes: scopes}, nil
}

func authorizer(name string, scheme map[string]any) (Authorizer, error) {
	def, ok := scheme["x-amazon-apigateway-authorizer"].(map[string]any)
	if !ok {
		return Authorizer{}, fmt.Errorf("%w: security scheme %s: neither awsSigv4 nor an x-amazon-apigateway-authorizer", ErrUnsupported, name)
	}
	a := Authorizer{Name: name}
	for k, v := range def {
		var ok bool
		switch k {
		case "type":
			var t string
			t, ok = v.(string)
			a.Type = strings.ToUpper(t)
			ok = ok && (a.Type == "JWT" || a.Type == "REQUEST")
		case "identitySource":
			a.IdentitySource, ok = identitySource(v)
		case "jwtConfiguration":
			var conf map[string]any
			conf, ok = v.(map[string]any)
			a.Issuer, _ = conf["issuer"].(string)
			for _, aud := range asList(conf["audience"]) {
				s, isStr := aud.(string)
				ok = ok && isStr
				a.Audience = append(a.Audience, s)
			}
		case "authorizerUri":
			a.URI, ok = v.(string)
		case "authorizerPayloadFormatVersion":
			a.PayloadFormatVersion, ok = v.(string)
		case "enableSimpleResponses":
			a.SimpleResponses, ok = v.(bool)
		case "authorizerResultTtlInSeconds":
			a.ResultTTLSeconds, ok = integer(v)
		default:
			return Authorizer{}, fmt.Errorf("%w: authorizer %s's %q", ErrUnsupported, name, k)
		}
		if !ok {
			return Authorizer{}, fmt.Errorf("emulator: authorizer %s: %s %v is not valid", name, k, v)
		}
	}
	switch {
	case a.Type == "JWT" && (a.Issuer == "" || len(a.Audience) == 0):
		return Authorizer{}, fmt.Errorf("emulator: JWT authorizer %s has no issuer or audience", name)
	case a.Type == "REQUEST" && a.URI == "":
		return Authorizer{}, fmt.Errorf("emulator: Lambda authorizer %s has no authorizerUri", name)
	}
	return a, nil
}

// identitySource reads a comma-separated string or a list of strings.
func identitySource(v any) ([]string, bool) {
	if s, ok := v.(string); ok {
		var out []string
		for part := range strings.SplitSeq(s, ",") {
			out = append(out, strings.TrimSpace(part))
		}
		return out, true
	}
	var out []string
	for _, e := range asList(v) {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, len(out) > 0
}

func integer(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), n == float64(int(n))
	}
	return 0, false
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func pathOf(v any, keys ...string) any {
	for _, k := range keys {
		v = asMap(v)[k]
	}
	return v
}
