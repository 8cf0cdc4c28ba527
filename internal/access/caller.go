// Package access decides what a caller of the products API may do: who it
// is (from the route's authorizer), which sellers it acts for, and how many
// products it may create per window.
//
// A token vouches for its own sellers (a JWT's seller_ids claim, a Lambda
// authorizer's context): that is decided in memory, before any DynamoDB
// call. An IAM caller's sellers are grants in the callers table, which the
// caller cannot write; the grant and the caller's window counter are
// checked by writes that go into the product's own TransactWriteItems
// (Guard.Check), so they cost no DynamoDB call of their own, and no
// product lands unless the grant existed and the window had room when it
// committed. docs/operations.md (Security) describes the model.
package access

import (
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemprincipal"
)

// Errors a caller is refused with, matched with errors.Is.
var (
	// ErrNoCaller: the request's authorizer names no caller (the route
	// has none, or it names no subject). 403.
	ErrNoCaller = errors.New("access: the request's authorizer names no caller")
	// ErrSellerForbidden: the caller may not act for the seller. 403.
	ErrSellerForbidden = errors.New("access: the caller may not act for this seller")
)

// SellerError is the ErrSellerForbidden case: the seller, and why the
// caller may not act for it.
type SellerError struct {
	Seller uuid.UUID
	// Reason says which list does not hold the seller: the token's, or
	// the caller's grant.
	Reason string
}

func (e *SellerError) Error() string {
	return fmt.Sprintf("access: the caller may not act for seller %s: %s", e.Seller, e.Reason)
}

// Is makes errors.Is(err, ErrSellerForbidden) true.
func (e *SellerError) Is(target error) bool { return target == ErrSellerForbidden }

// SellersClaim is the JWT claim, and the Lambda authorizer context key,
// that lists the sellers a token acts for (ParseSellers).
const SellersClaim = "seller_ids"

// Caller is who sent a request, as its route's authorizer names it.
type Caller struct {
	id string
	// vouched is what the authorizer says of the caller's sellers, nil
	// when it says nothing and the grants table decides (IAM).
	vouched *vouch
}

// vouch is a token's own list of sellers, or why it could not be read.
type vouch struct {
	sellers Sellers
	err     error
}

// FromRequestV2 names the caller of an API Gateway HTTP API (payload
// 2.0) request:
//
//   - JWT authorizer: the issuer and subject (idemhttp.PrincipalV2); the
//     token's seller_ids claim lists its sellers;
//   - Lambda authorizer: its principalId or sub; its context's
//     seller_ids lists them;
//   - IAM (SigV4): the IAM identity, with the session of an assumed role
//     left out (arn:aws:iam::123456789012:role/Name), so that every
//     session of a role is one caller, to grants and to the limit alike;
//     a Cognito identity pool's caller is its identity. The grants table
//     lists its sellers.
//
// A request without an authorizer, or whose authorizer names no subject,
// is ErrNoCaller: it acts for no seller.
func FromRequestV2(rc events.APIGatewayV2HTTPRequestContext) (Caller, error) {
	a := rc.Authorizer
	if a == nil {
		return Caller{}, ErrNoCaller
	}
	switch {
	case a.JWT != nil:
		id, err := idemhttp.PrincipalV2(rc)
		if err != nil {
			return Caller{}, fmt.Errorf("%w: %w", ErrNoCaller, err)
		}
		s, err := ParseSellers(a.JWT.Claims[SellersClaim])
		return Caller{id: id, vouched: &vouch{sellers: s, err: err}}, nil
	case a.IAM != nil:
		id := iamCaller(a.IAM)
		if id == "" {
			return Caller{}, fmt.Errorf("%w: an IAM authorizer without a caller", ErrNoCaller)
		}
		return Caller{id: id}, nil
	case a.Lambda != nil:
		id, err := idemhttp.PrincipalV2(rc)
		if err != nil {
			return Caller{}, fmt.Errorf("%w: %w", ErrNoCaller, err)
		}
		v := &vouch{err: fmt.Errorf("the authorizer's context has no %s string", SellersClaim)}
		if raw, ok := a.Lambda[SellersClaim].(string); ok {
			v.sellers, v.err = ParseSellers(raw)
		}
		return Caller{id: id, vouched: v}, nil
	}
	return Caller{}, ErrNoCaller
}

// IAMCaller is a caller authenticated by IAM as arn (a user's, a role's,
// an assumed role's session: the session is left out), as FromRequestV2
// names it; for the local runner and tests, which have no API Gateway to
// fill a request's context.
func IAMCaller(arn string) (Caller, error) {
	if id := iamCaller(&events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: arn}); id != "" {
		return Caller{id: id}, nil
	}
	return Caller{}, ErrNoCaller
}

// iamCaller is the caller an IAM authorizer names, "" when none.
func iamCaller(iam *events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription) string {
	if c := iam.CognitoIdentity; c.IdentityID != "" {
		// Every identity of a pool assumes the pool's role: the identity,
		// not the role, is the caller.
		return "cognito-identity:" + c.IdentityPoolID + ":" + c.IdentityID
	}
	if iam.UserARN != "" {
		return idemprincipal.IdentityARN(iam.UserARN)
	}
	if iam.CallerID != "" {
		return "iam-caller:" + iam.AccountID + ":" + iam.CallerID
	}
	return ""
}

// ID is the caller's identity: what its grants and its limit are kept
// under in the callers table, and what operators name it by.
func (c Caller) ID() string { return c.id }

// Vouched reports whether the caller's authorizer lists its sellers
// itself (a JWT, a Lambda authorizer); otherwise the grants table does.
func (c Caller) Vouched() bool { return c.vouched != nil }

// VouchesFor answers, for a caller whose authorizer lists its sellers,
// whether seller is among them: ErrSellerForbidden when it is not, or the
// list does not parse. For any other caller it is nil: the grants table
// decides a creation (Guard.Check), the route's IAM policy a read.
func (c Caller) VouchesFor(seller uuid.UUID) error {
	switch v := c.vouched; {
	case v == nil:
		return nil
	case v.err != nil:
		return &SellerError{Seller: seller, Reason: fmt.Sprintf("the authorizer's %s cannot be read: %v", SellersClaim, v.err)}
	case !v.sellers.Has(seller):
		return &SellerError{Seller: seller, Reason: fmt.Sprintf("the authorizer's %s does not list it", SellersClaim)}
	}
	return nil
}

// The OAuth scopes a JWT must carry, one per route (template.yaml gives
// each route its scope, after the stack's JwtScopePrefix, as the route's
// AuthorizationScopes; API Gateway refuses a token without it). Which
// sellers the token acts for is its seller_ids claim.
const (
	// ScopeCreateProducts is POST /products's.
	ScopeCreateProducts = "products:create"
	// ScopeReadProducts is GET /products/{id}'s.
	ScopeReadProducts = "products:read"
	// ScopeReadSellers is GET /sellers/{id}'s.
	ScopeReadSellers = "sellers:read"
)
