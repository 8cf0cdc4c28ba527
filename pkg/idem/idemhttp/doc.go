// Package idemhttp is the HTTP side of idempotency keys on top of
// pkg/idem, for API Gateway HTTP APIs (payload 2.0) and REST APIs
// (payload 1.0) and Application Load Balancers on Lambda, and for
// net/http servers:
//
//   - ParseKey reads the Idempotency-Key header (an RFC 8941 string, or
//     leniently a bare token);
//   - PrincipalV2 and PrincipalV1 name the caller from an API Gateway
//     request context (JWT or Cognito issuer and subject, IAM caller,
//     Lambda authorizer), PrincipalALBOIDC from a load balancer's OIDC
//     headers, so that two callers never share a key;
//   - ProblemFor maps pkg/idem's errors to RFC 9457 problem+json answers:
//     409 with Retry-After while another request holds the key, 422 for a
//     key reused with another payload, 503 with Retry-After when the store
//     is unavailable, 500 without internal detail;
//   - FromAPIGatewayV2 and ToAPIGatewayV2 turn an API Gateway response
//     into the store's opaque idem.Response (the status and headers as
//     its metadata) and back, with Idempotent-Replayed: true on a replay;
//   - Middleware makes a whole handler idempotent (APIGatewayV2,
//     APIGatewayV1 and ALB share one flow, Handler its prologue and
//     answers), for handlers whose
//     effect is outside DynamoDB (idem.Store.Run underneath); its Wait
//     is idem.WithWait per request.
//
// A handler whose effect is DynamoDB writes should call idem.Store.Execute
// or Transact itself, so that the writes and the key's completion commit
// together, with Middleware.ScopeV2 before (the key, the caller, the
// scope) and Middleware.AnswerV2 after (the stored response or the
// problem): the middleware's own prologue and answers.
package idemhttp
