// Package appsync makes an AWS AppSync direct Lambda resolver idempotent:
// the adapter an adopter writes for a Lambda event pkg/idem does not
// cover, from the library's public API alone (idem.Do with its per-call
// options, idem.NewScope, idem.Fingerprint, idemprincipal's spellings,
// idem.OutcomeOf and RetryAfter). A mutation that carries an idempotency
// key runs its resolver at most once per caller, field and key; every
// retry gets the first answer, and with WithWait a duplicate that comes
// while the first runs waits for its answer.
//
// The key comes from the request's Idempotency-Key header (AppSync passes
// the request's headers to the resolver). The caller is the resolver's
// identity, spelled as every way in of the library spells it
// (pkg/idem/idemprincipal): a Cognito user pool or OIDC token (issuer and
// subject), an IAM caller (a Cognito identity pool's identity, else its
// ARN's identity: an assumed role's sessions are the role), or a Lambda
// authorizer's resolver context (principalId, else sub). A request authorized by an API key has no identity, and is
// refused: keys are scoped to the caller. The fingerprint is the field
// and its arguments as canonical JSON.
//
// Errors go back to AppSync as Lambda errors whose errorType names what
// happened (messages.InvokeResponse_Error), which AppSync passes to the
// client in the GraphQL error: IdempotencyConflict (another request holds
// the key: retry after the seconds the message gives), IdempotencyKeyReuse
// (the key was used with other arguments), Unavailable (the store could
// not be reached, or the resolver lost its key to another: retry with the
// same key), BadRequest (no key, or a malformed one), Forbidden (no
// caller). The resolver's own errors release the key and go back as they
// are. An answer whose completion could not be recorded
// (idem.ErrNotRecorded) is still the resolver's answer.
package appsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemprincipal"
)

// Event is a direct Lambda resolver's event: the field's arguments, the
// caller's identity, the request's headers and which field it resolves.
type Event struct {
	Arguments json.RawMessage `json:"arguments"`
	Identity  *Identity       `json:"identity"`
	Request   Request         `json:"request"`
	Info      Info            `json:"info"`
}

// Identity is the caller's identity as AppSync sends it: the fields of
// events.AppSyncCognitoIdentity (Cognito user pools, OIDC), of
// events.AppSyncIAMIdentity (IAM), and a Lambda authorizer's
// resolverContext, whichever the API's authorization filled in.
type Identity struct {
	events.AppSyncCognitoIdentity
	AccountID             string         `json:"accountId"`
	UserARN               string         `json:"userArn"`
	CognitoIdentityPoolID string         `json:"cognitoIdentityPoolId"`
	CognitoIdentityID     string         `json:"cognitoIdentityId"`
	ResolverContext       map[string]any `json:"resolverContext"`
}

// Request is what AppSync passes of the GraphQL request.
type Request struct {
	Headers map[string]string `json:"headers"`
}

// Info names the field being resolved.
type Info struct {
	FieldName      string `json:"fieldName"`
	ParentTypeName string `json:"parentTypeName"`
}

// HeaderKey is the request header that carries the idempotency key.
const HeaderKey = "idempotency-key"

// Error types, each the errorType of a Lambda error AppSync passes to the
// client.
const (
	TypeConflict    = "IdempotencyConflict"
	TypeKeyReuse    = "IdempotencyKeyReuse"
	TypeUnavailable = "Unavailable"
	TypeBadRequest  = "BadRequest"
	TypeForbidden   = "Forbidden"
	TypeInternal    = "InternalError"
)

// errNoCaller is an event whose identity names nobody.
var errNoCaller = errors.New("appsync: the request's identity names no caller, and idempotency keys are scoped to the caller")

// Principal names the caller of a resolver event as the library's ways in
// name it (pkg/idem/idemprincipal), so that one caller has one principal
// over AppSync and API Gateway alike. An identity that names nobody is
// an error.
func Principal(id *Identity) (string, error) {
	var p string
	err := errNoCaller
	switch {
	case id == nil:
	case id.Sub != "":
		p, err = idemprincipal.FromClaims(func(claim string) string {
			switch claim {
			case "iss":
				return id.Issuer
			case "sub":
				return id.Sub
			}
			s, _ := id.Claims[claim].(string)
			return s
		})
	case id.UserARN != "" || id.CognitoIdentityID != "":
		p, err = idemprincipal.FromIAM(idemprincipal.IAMIdentity{
			UserARN: id.UserARN, AccountID: id.AccountID,
			CognitoIdentityPoolID: id.CognitoIdentityPoolID, CognitoIdentityID: id.CognitoIdentityID,
		})
	case id.ResolverContext != nil:
		p, err = idemprincipal.FromLambdaContext(id.ResolverContext)
	}
	if err != nil {
		return "", fmt.Errorf("%w: %w", errNoCaller, err)
	}
	return p, nil
}

// Option configures a Resolver, as the library's adapters are configured.
type Option struct{ call idem.CallOption }

// WithWait makes a duplicate that comes while the first request runs
// wait up to d for its answer (idem.CallWait), rather than answer
// IdempotencyConflict at once: a GraphQL client then gets the data.
func WithWait(d time.Duration) Option { return Option{idem.CallWait(d)} }

// Resolver makes fn idempotent on store: fn runs at most once per caller,
// field and key, and every retry gets its first answer. It refuses a
// missing store or fn, and an option the store refuses.
func Resolver[A, R any](store *idem.Store, fn func(context.Context, A) (R, error), opts ...Option) (func(context.Context, Event) (R, error), error) {
	var call []idem.CallOption
	for _, o := range opts {
		call = append(call, o.call)
	}
	switch {
	case store == nil:
		return nil, errors.New("appsync: nil store")
	case fn == nil:
		return nil, errors.New("appsync: nil resolver")
	}
	if err := store.ValidateCall(call...); err != nil {
		return nil, fmt.Errorf("appsync: %w", err)
	}
	return func(ctx context.Context, ev Event) (R, error) {
		var zero R
		scope, err := scopeOf(ev)
		if err != nil {
			return zero, toAppSync(err)
		}
		fp, err := idem.Fingerprint(struct {
			Field     string          `json:"field"`
			Arguments json.RawMessage `json:"arguments"`
		}{ev.Info.ParentTypeName + "." + ev.Info.FieldName, ev.Arguments})
		if err != nil {
			return zero, messages.InvokeResponse_Error{Type: TypeBadRequest, Message: "the arguments are not JSON: " + err.Error()}
		}
		var handlerErr error
		v, _, err := idem.Do(ctx, store, scope, fp, func(ctx context.Context) (R, error) {
			var args A
			if err := json.Unmarshal(ev.Arguments, &args); err != nil {
				handlerErr = messages.InvokeResponse_Error{Type: TypeBadRequest, Message: "the arguments do not decode: " + err.Error()}
				return zero, handlerErr
			}
			r, err := fn(ctx, args)
			handlerErr = err
			return r, err
		}, call...)
		switch {
		case err == nil, errors.Is(err, idem.ErrNotRecorded):
			return v, nil // the effect happened: say so
		case handlerErr != nil && !errors.Is(err, idem.ErrLeaseLost):
			return zero, handlerErr // the resolver's own failure: the key is released
		}
		return zero, toAppSync(err)
	}, nil
}

// scopeOf reads an event's key, caller and field.
func scopeOf(ev Event) (idem.Scope, error) {
	var key string
	for k, v := range ev.Request.Headers {
		if strings.EqualFold(k, HeaderKey) {
			key = v
		}
	}
	if key == "" {
		return idem.Scope{}, fmt.Errorf("%w: no %s header", idem.ErrInvalidKey, HeaderKey)
	}
	principal, err := Principal(ev.Identity)
	if err != nil {
		return idem.Scope{}, err
	}
	return idem.NewScope(ev.Info.ParentTypeName+"."+ev.Info.FieldName, principal, key)
}

// toAppSync is the Lambda error AppSync passes to the client for err:
// its class is the library's (idem.OutcomeOf), and so is when to retry
// (idem.RetryAfter).
func toAppSync(err error) error {
	e := messages.InvokeResponse_Error{Type: TypeInternal, Message: "internal error"}
	if errors.Is(err, errNoCaller) {
		return messages.InvokeResponse_Error{Type: TypeForbidden, Message: err.Error()}
	}
	switch idem.OutcomeOf(err) {
	case idem.OutcomeInFlight:
		e.Type = TypeConflict
		e.Message = fmt.Sprintf("another request with this key is in progress; retry after %d s", int(math.Ceil(idem.RetryAfter(err).Seconds())))
	case idem.OutcomeKeyReuse:
		e.Type, e.Message = TypeKeyReuse, "this key was used with other arguments"
	case idem.OutcomeUnavailable, idem.OutcomeLeaseLost:
		e.Type, e.Message = TypeUnavailable, "try again with the same key"
	case idem.OutcomeRejected:
		e.Type, e.Message = TypeBadRequest, err.Error()
	}
	return e
}
