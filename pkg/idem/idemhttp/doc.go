// Package idemhttp is the HTTP side of idempotency keys on top of
// pkg/idem, for API Gateway HTTP APIs on Lambda and for net/http servers:
//
//   - ParseKey reads the Idempotency-Key header (an RFC 8941 string, or
//     leniently a bare token);
//   - PrincipalV2 names the caller from an API Gateway request context
//     (JWT issuer and subject, IAM caller, Lambda authorizer), so that
//     two callers never share a key;
//   - ProblemFor maps pkg/idem's errors to RFC 9457 problem+json answers:
//     409 with Retry-After while another request holds the key, 422 for a
//     key reused with another payload, 503 with Retry-After when the store
//     is unavailable, 500 without internal detail;
//   - APIGatewayV2 and FromAPIGatewayV2 turn stored responses into API
//     Gateway responses and back, with Idempotent-Replayed: true on a
//     replay;
//   - Middleware makes a whole handler idempotent, for handlers whose
//     effect is outside DynamoDB (idem.Store.Run underneath); with its
//     Wait, a duplicate that arrives while the first request runs gets the
//     first's response rather than 409.
//
// A handler whose effect is DynamoDB writes should call idem.Store.Execute
// itself, so that the writes and the key's completion commit together, and
// use the rest of this package for its HTTP answers.
package idemhttp
