// Package idemhttp is the HTTP side of idempotency keys on pkg/idem: a
// Middleware that makes a handler idempotent, for API Gateway HTTP APIs
// (payload 2.0), REST APIs (payload 1.0) and Application Load Balancers
// on Lambda, and for net/http servers.
//
//	mw, err := idemhttp.New(store, idemhttp.WithWait(3*time.Second))
//	...
//	lambda.Start(mw.APIGatewayV2(sendEmail))
//
// # Requests
//
// A request with an Idempotency-Key header (ParseKey: an RFC 8941 string,
// or leniently a bare token) runs the handler at most once per caller,
// key and payload, and every retry gets the stored response byte for
// byte with Idempotent-Replayed: true. Requests with a safe method (GET,
// HEAD, OPTIONS, TRACE) pass straight through, so one middleware can
// wrap a whole router; a request without a key is a 400 unless
// WithOptionalKey lets it through unprotected. The handler finds the
// request's scope, its key included, with idem.ScopeFrom.
//
// The payload's fingerprint is the method, path, query, body (canonical
// JSON when it is strict JSON: RequestFingerprint) and the
// WithFingerprintHeaders (Content-Type by default): the same key with
// another payload is a 422.
//
// # Callers
//
// Keys are scoped to the caller, so that one caller is never served
// another's stored response (cookies included) nor uses up another's
// key. The principal comes from the route's authorizer on API Gateway
// (PrincipalV2, PrincipalV1, in pkg/idem/idemprincipal's spellings), and
// from a function of the adopter's on net/http and behind a load
// balancer, which authenticate nobody (WithPrincipal, WithPrincipalALB;
// PrincipalALBOIDC for OIDC listener rules); WithPrincipalV2 and
// WithPrincipalV1 replace the defaults. A principal function that names
// nobody ("") or fails answers 403. A middleware with no way to name a
// request's caller (no function, a route without an authorizer) answers
// 500 rather than put every caller in one scope, unless WithAnonymous
// chooses that one anonymous scope (idem.NewAnonymousScope), which no
// named caller shares.
//
// # Effects and answers
//
// The middleware runs the handler under idem.Store.Run: it claims the
// key, runs the handler, then records its response with a fenced write.
// Its one window is Run's: an effect whose completion was lost runs again
// after the lease. A handler whose effect is DynamoDB writes calls
// idem.Store.Execute or Transact itself, so that its writes commit with
// the key's completion: ScopeV2 (ScopeV1, ScopeALB) before, for the key,
// the caller and the scope; FromAPIGatewayV2 (FromAPIGatewayV1, FromALB)
// for the response it stores; AnswerV2 (AnswerV1, AnswerALB) after, for
// the replay or the problem; ToAPIGatewayV2 (ToAPIGatewayV1, ToALB)
// renders a stored response.
//
// A response that asks the client to retry is sent but not stored, and
// the key is released: a status of 500 or more, 408, 409, 425, 429, and
// one about the request's headers, which the retry may correct (401,
// 403, 406, 412, 415). Hop-by-hop headers and Content-Length are never
// stored. A response too large for the record is stored without its
// body (HeaderBodyOmitted), and its replays carry none of the headers
// that describe a body: the handler still runs once. If the completion
// cannot be recorded (idem.ErrNotRecorded), the client gets the
// handler's response, unstored, and the key stays held until its lease
// ends. An error the handler returns releases the key and goes back to
// the Lambda runtime unchanged. The net/http handler's response is
// buffered, so streaming and hijacking are not available to it.
//
// The middleware's own answers are RFC 9457 problem+json (ProblemFor,
// under WithProblemTypeBase): 400 for a missing or malformed key, 403 for
// a caller without a subject, 409 with Retry-After while another request
// holds the key (with WithWait, once the wait for its response runs out
// or it dies), 413 for a body over WithMaxBodyBytes, 422 for key reuse,
// 503 with Retry-After when the store is unavailable, 500 otherwise.
//
// # Configuration
//
// New takes the store and Options, and refuses what it cannot honour.
// WithWait and WithRetention are the store's options of the same names
// for the middleware's requests (idem.CallWait, idem.CallRetention).
// Observe the middleware's calls through the store's trace
// (idem.WithTrace): every request that reaches the store is one call
// with its outcome; one refused before it (no key, no caller, a body
// over the limit) is its 4xx alone.
package idemhttp
