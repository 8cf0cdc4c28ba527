package idemhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// signup is a sign-up endpoint that starts a session: each execution
// sets a fresh session cookie, so a response served to the wrong caller
// shows as another caller's cookie.
type signup struct{ ran atomic.Int64 }

func (s *signup) cookie() string {
	s.ran.Add(1)
	return "session=" + uuid.NewString() + "; Path=/; HttpOnly"
}

func (s *signup) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Set-Cookie", s.cookie())
	w.WriteHeader(http.StatusCreated)
}

func (s *signup) lambda(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusCreated, Cookies: []string{s.cookie()}}, nil
}

func (s *signup) lambdaV1(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	return events.APIGatewayProxyResponse{StatusCode: http.StatusCreated, MultiValueHeaders: map[string][]string{"Set-Cookie": {s.cookie()}}}, nil
}

func (s *signup) alb(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
	return events.ALBTargetGroupResponse{StatusCode: http.StatusCreated, Headers: map[string]string{"Set-Cookie": s.cookie()}}, nil
}

// signupV1 is a REST API sign-up request with key k-1 from user, whose
// authorizer's context holds it under field (a guest's route has no
// authorizer), answered by h.
func signupV1(t *testing.T, h idemhttp.APIGatewayV1Handler, field, user string) answer {
	t.Helper()
	req := events.APIGatewayProxyRequest{
		Resource: "/signups", Path: "/signups", HTTPMethod: http.MethodPost, Body: `{"plan":"free"}`,
		Headers: map[string]string{"Idempotency-Key": `"k-1"`, "Content-Type": "application/json"},
	}
	if user != "" {
		req.RequestContext.Authorizer = map[string]any{field: user}
	}
	resp, err := h(context.Background(), req)
	must.NoError(t, err)
	check.Equal(t, http.StatusCreated, resp.StatusCode, "%s", resp.Body)
	return answer{strings.Join(resp.MultiValueHeaders["Set-Cookie"], "\n"), resp.Headers[idemhttp.HeaderReplayed] == "true"}
}

// postSignup is a sign-up request with key k-1 from user (X-User; ""
// for a guest), served by h.
func postSignup(h http.Handler, user string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/signups", strings.NewReader(`{"plan":"free"}`))
	r.Header.Set("Idempotency-Key", `"k-1"`)
	if user != "" {
		r.Header.Set("X-User", user)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// answer is what one caller got: the session cookie and whether it was a
// replay.
type answer struct {
	cookie   string
	replayed bool
}

// With WithAnonymous and the adopter's own principal function, a caller
// that the function names "anonymous" (a user name anyone may register)
// is a named caller like any other: it is never served a guest's stored
// response (Set-Cookie included), and no guest is served its response,
// on any path: net/http, API Gateway v2 and v1 (REST), and a load
// balancer, and on REST an authorizer that names its caller "anonymous"
// as well. Guests still share their one scope.
func TestAUserNamedAnonymousIsNotTheAnonymousScope(t *testing.T) {
	t.Parallel()
	// Each way builds its middleware with its principal function, in
	// the anonymous scope for the callers it names "".
	type build func(opts ...idemhttp.Option) *idemhttp.Middleware
	ways := map[string]func(mw build, s *signup) func(user string) answer{
		"net/http": func(mw build, s *signup) func(string) answer {
			h := mw(idemhttp.WithPrincipal(func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil })).Handler(s)
			return func(user string) answer {
				rec := postSignup(h, user)
				check.Equal(t, http.StatusCreated, rec.Code, "%s", rec.Body)
				return answer{rec.Header().Get("Set-Cookie"), rec.Header().Get(idemhttp.HeaderReplayed) == "true"}
			}
		},
		"API Gateway v2": func(mw build, s *signup) func(string) answer {
			// The user's name from a Lambda authorizer's context; a
			// route open to guests has no authorizer.
			h := mw(idemhttp.WithPrincipalV2(func(rc events.APIGatewayV2HTTPRequestContext) (string, error) {
				if rc.Authorizer == nil {
					return "", nil
				}
				name, _ := rc.Authorizer.Lambda["username"].(string)
				return name, nil
			})).APIGatewayV2(s.lambda)
			return func(user string) answer {
				req := emailRequest(`"k-1"`, `{"plan":"free"}`)
				req.RouteKey, req.RawPath = "POST /signups", "/signups"
				if user != "" {
					req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"username": user}}
				}
				resp, err := h(context.Background(), req)
				must.NoError(t, err)
				check.Equal(t, http.StatusCreated, resp.StatusCode, "%s", resp.Body)
				return answer{strings.Join(resp.Cookies, "\n"), resp.Headers[idemhttp.HeaderReplayed] == "true"}
			}
		},
		"API Gateway v1": func(mw build, s *signup) func(string) answer {
			// As on v2: the user's name from a Lambda authorizer's
			// context, none on a route open to guests.
			h := mw(idemhttp.WithPrincipalV1(func(rc events.APIGatewayProxyRequestContext) (string, error) {
				name, _ := rc.Authorizer["username"].(string)
				return name, nil
			})).APIGatewayV1(s.lambdaV1)
			return func(user string) answer { return signupV1(t, h, "username", user) }
		},
		"API Gateway v1, its authorizer": func(mw build, s *signup) func(string) answer {
			// PrincipalV1 itself: a Lambda authorizer whose principalId
			// is "anonymous", and guests on a route without one.
			h := mw().APIGatewayV1(s.lambdaV1)
			return func(user string) answer { return signupV1(t, h, "principalId", user) }
		},
		"ALB": func(mw build, s *signup) func(string) answer {
			h := mw(idemhttp.WithPrincipalALB(func(req events.ALBTargetGroupRequest) (string, error) { return req.Headers["x-user"], nil })).ALB(s.alb)
			return func(user string) answer {
				req := events.ALBTargetGroupRequest{
					HTTPMethod: http.MethodPost, Path: "/signups", Body: `{"plan":"free"}`,
					Headers: map[string]string{"idempotency-key": `"k-1"`, "content-type": "application/json"},
				}
				if user != "" {
					req.Headers["x-user"] = user
				}
				resp, err := h(context.Background(), req)
				must.NoError(t, err)
				check.Equal(t, http.StatusCreated, resp.StatusCode, "%s", resp.Body)
				return answer{resp.Headers["Set-Cookie"], resp.Headers[idemhttp.HeaderReplayed] == "true"}
			}
		},
	}
	for name, way := range ways {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := &signup{}
			call := way(func(opts ...idemhttp.Option) *idemhttp.Middleware { return newMiddleware(t, &outcomes{}, opts...) }, s)

			guest := call("")
			check.False(t, guest.replayed)
			named := call("anonymous")
			check.False(t, named.replayed, "the user named anonymous was served the guest's stored response")
			check.NotEqual(t, guest.cookie, named.cookie, "the guest's session cookie leaked to the user named anonymous")
			check.EqualValues(t, 2, s.ran.Load(), "each scope runs the handler once")

			// Each still replays its own, and only its own.
			again := call("")
			check.True(t, again.replayed)
			check.Equal(t, guest.cookie, again.cookie, "guests share their one scope")
			again = call("anonymous")
			check.True(t, again.replayed)
			check.Equal(t, named.cookie, again.cookie)
			check.EqualValues(t, 2, s.ran.Load())
		})
	}
}

// A record the anonymous scope wrote before anonymity became a kind of
// scope of its own (its principal spelled "anonymous", like a user of
// that name) stays the anonymous scope's: a guest's retry across the
// upgrade replays it, and a user named "anonymous" no longer can.
func TestAnAnonymousRecordWrittenBeforeStaysTheGuests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, store := newTable(t)

	const oldID = "v1|13:POST /signups|9:anonymous|3:k-1" // as every release before this one wrote it
	r := httptest.NewRequest(http.MethodPost, "/signups", strings.NewReader(`{"plan":"free"}`))
	fp := idemhttp.RequestFingerprint(r.Method, r.URL.Path, r.URL.RawQuery, []byte(`{"plan":"free"}`))
	sc, err := idem.NewScope("POST /signups", "x", "k-1")
	must.NoError(t, err)
	item := formatOne(sc, fp, http.StatusCreated, map[string]string{"Set-Cookie": "session=guest; Path=/"}, &types.AttributeValueMemberS{Value: ""})
	item["id"] = &types.AttributeValueMemberS{Value: oldID}
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("idempotency"), Item: item})
	must.NoError(t, err)

	s := &signup{}
	mw := mustNew(t, store, idemhttp.WithOperation("POST /signups"), idemhttp.WithAnonymous(), idemhttp.WithFingerprintHeaders(),
		idemhttp.WithPrincipal(func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil }))
	h := mw.Handler(s)
	guest := postSignup(h, "")
	check.Equal(t, http.StatusCreated, guest.Code, "%s", guest.Body)
	check.Equal(t, "true", guest.Header().Get(idemhttp.HeaderReplayed), "a guest's retry replays the record written before")
	check.Equal(t, "session=guest; Path=/", guest.Header().Get("Set-Cookie"))
	named := postSignup(h, "anonymous")
	check.Equal(t, "", named.Header().Get(idemhttp.HeaderReplayed), "the user named anonymous replayed the guest's record")
	check.NotEqual(t, "session=guest; Path=/", named.Header().Get("Set-Cookie"))
	check.EqualValues(t, 1, s.ran.Load(), "only the named user's request ran")
}
