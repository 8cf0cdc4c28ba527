package idemhttp_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// New refuses what it cannot honour, before any request: no store, an
// option out of range, a retention under the store's lease.
func TestNewRefusesAConfigurationItCannotHonour(t *testing.T) {
	t.Parallel()
	_, store := newTable(t)
	_, err := idemhttp.New(nil)
	check.ErrorContains(t, err, "nil store")
	for name, opt := range map[string]idemhttp.Option{
		"empty operation":    idemhttp.WithOperation(""),
		"nil principal":      idemhttp.WithPrincipal(nil),
		"nil principal v2":   idemhttp.WithPrincipalV2(nil),
		"nil principal v1":   idemhttp.WithPrincipalV1(nil),
		"nil principal alb":  idemhttp.WithPrincipalALB(nil),
		"empty header":       idemhttp.WithFingerprintHeaders("Content-Type", ""),
		"no body":            idemhttp.WithMaxBodyBytes(0),
		"negative wait":      idemhttp.WithWait(-time.Second),
		"retention < lease":  idemhttp.WithRetention(time.Second),
		"retention negative": idemhttp.WithRetention(-time.Hour),
	} {
		mw, err := idemhttp.New(store, opt)
		check.Error(t, err, name)
		check.Nil(t, mw, name)
	}
	mw, err := idemhttp.New(store, idemhttp.Option{}, idemhttp.WithWait(0), idemhttp.WithRetention(time.Hour))
	must.NoError(t, err, "a zero Option is none")
	check.NotNil(t, mw)

	// A Middleware not built with New answers 500, without a panic.
	var zero idemhttp.Middleware
	resp, err := zero.APIGatewayV2(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		t.Error("the handler ran without a store")
		return events.APIGatewayV2HTTPResponse{}, nil
	})(context.Background(), emailRequest(`"k"`, `{}`))
	must.NoError(t, err)
	check.Equal(t, http.StatusInternalServerError, resp.StatusCode)
}

// WithRetention is the retention of the middleware's operation alone:
// its records expire after it, another middleware's on the same store
// after the store's.
func TestWithRetentionIsTheOperations(t *testing.T) {
	t.Parallel()
	db, store := newTable(t)
	ok := func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 202}, nil
	}
	short := mustNew(t, store, idemhttp.WithAnonymous(), idemhttp.WithOperation("POST /short"), idemhttp.WithRetention(2*time.Hour)).APIGatewayV2(ok)
	plain := mustNew(t, store, idemhttp.WithAnonymous(), idemhttp.WithOperation("POST /plain")).APIGatewayV2(ok)
	expiry := func(h idemhttp.APIGatewayV2Handler, operation string) time.Duration {
		t.Helper()
		before := time.Now()
		_, err := h(context.Background(), emailRequest(`"k"`, `{}`))
		must.NoError(t, err)
		sc, _ := idem.NewAnonymousScope(operation, "k")
		out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{
			TableName: aws.String("idempotency"), Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: sc.ID()}},
		})
		must.NoError(t, err)
		exp := out.Item["expires_at"].(*types.AttributeValueMemberN).Value
		at, err := time.Parse(time.RFC3339, "1970-01-01T00:00:00Z")
		must.NoError(t, err)
		var secs int64
		for _, c := range exp {
			secs = secs*10 + int64(c-'0')
		}
		return at.Add(time.Duration(secs) * time.Second).Sub(before.Truncate(time.Second)).Round(time.Hour)
	}
	check.Equal(t, 2*time.Hour, expiry(short, "POST /short"))
	check.Equal(t, 24*time.Hour, expiry(plain, "POST /plain"), "the store's retention")
}

// A REST API or load balancer handler that calls the store itself has
// the middleware's prologue and answers, as an HTTP API's has with
// ScopeV2 and AnswerV2, and stores and renders its response with
// FromAPIGatewayV1 and ToAPIGatewayV1, FromALB and ToALB.
func TestScopeAndAnswerOfEveryEvent(t *testing.T) {
	t.Parallel()
	_, store := newTable(t)
	ctx := context.Background()
	mw := mustNew(t, store, idemhttp.WithOperation("POST /orders"),
		idemhttp.WithPrincipalALB(func(req events.ALBTargetGroupRequest) (string, error) {
			if vs := req.MultiValueHeaders["x-user"]; len(vs) == 1 {
				return "user:" + vs[0], nil
			}
			return "user:" + req.Headers["x-user"], nil
		}))
	runs := 0
	execute := func(scope idem.Scope, resp func() (idem.Response, error)) (idem.Result, error) {
		return store.Execute(ctx, scope, "fp", func(context.Context) (idem.Effect, error) {
			runs++
			r, err := resp()
			return idem.Effect{Response: r}, err
		})
	}

	// REST API: the Cognito authorizer names the caller.
	v1 := func(req events.APIGatewayProxyRequest) events.APIGatewayProxyResponse {
		scope, err := mw.ScopeV1(req, "")
		if err != nil {
			return mw.AnswerV1(idem.Result{}, err)
		}
		res, err := execute(scope, func() (idem.Response, error) {
			return idemhttp.FromAPIGatewayV1(events.APIGatewayProxyResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json"},
				MultiValueHeaders: map[string][]string{"Set-Cookie": {"a=1", "b=2"}}, Body: `{"order":1}`})
		})
		return mw.AnswerV1(res, err)
	}
	first := v1(emailRequestV1(`"o-1"`, `{}`))
	again := v1(emailRequestV1(`"o-1"`, `{}`))
	check.Equal(t, 201, first.StatusCode)
	check.Equal(t, first.Body, again.Body)
	check.Equal(t, "true", again.Headers[idemhttp.HeaderReplayed])
	check.Equal(t, []string{"a=1", "b=2"}, again.MultiValueHeaders["Set-Cookie"])
	check.Equal(t, 400, v1(emailRequestV1("", `{}`)).StatusCode, "no key")
	noAuth := emailRequestV1(`"o-2"`, `{}`)
	noAuth.RequestContext.Authorizer = nil
	check.Equal(t, 500, v1(noAuth).StatusCode, "no authorizer, no WithAnonymous")

	// A load balancer, in both header modes.
	for _, multi := range []bool{false, true} {
		alb := func(req events.ALBTargetGroupRequest) events.ALBTargetGroupResponse {
			scope, err := mw.ScopeALB(req, "")
			if err != nil {
				return mw.AnswerALB(req, idem.Result{}, err)
			}
			res, err := execute(scope, func() (idem.Response, error) {
				return idemhttp.FromALB(events.ALBTargetGroupResponse{StatusCode: 201, Headers: map[string]string{"Set-Cookie": "c=3"}, Body: `{"order":2}`})
			})
			return mw.AnswerALB(req, res, err)
		}
		key := fmt.Sprintf(`"o-alb-%v"`, multi)
		first := alb(emailRequestALB(multi, key, `{}`))
		again := alb(emailRequestALB(multi, key, `{}`))
		check.Equal(t, "201 Created", first.StatusDescription)
		check.Equal(t, first.Body, again.Body)
		if multi {
			check.Equal(t, []string{"true"}, again.MultiValueHeaders[idemhttp.HeaderReplayed])
			check.Equal(t, []string{"c=3"}, again.MultiValueHeaders["Set-Cookie"])
			check.Empty(t, again.Headers)
		} else {
			check.Equal(t, "true", again.Headers[idemhttp.HeaderReplayed])
			check.Equal(t, "c=3", again.Headers["Set-Cookie"])
		}
		check.Equal(t, 400, alb(emailRequestALB(multi, "", `{}`)).StatusCode)
	}
	check.Equal(t, 3, runs, "one run per key")

	// The converters alone: what is stored is what is rendered.
	stored, err := idemhttp.FromALB(events.ALBTargetGroupResponse{StatusCode: 202, MultiValueHeaders: map[string][]string{"X-A": {"1", "2"}}})
	must.NoError(t, err)
	check.Equal(t, idem.Response{Status: 202, Meta: map[string]string{"X-A": "1, 2"}, Body: []byte{}}, stored)
	check.Equal(t, events.ALBTargetGroupResponse{StatusCode: 202, StatusDescription: "202 Accepted", MultiValueHeaders: map[string][]string{"X-A": {"1, 2"}}},
		idemhttp.ToALB(stored, false, true))
	check.Equal(t, events.APIGatewayProxyResponse{StatusCode: 202, Headers: map[string]string{"X-A": "1, 2", idemhttp.HeaderReplayed: "true"}},
		idemhttp.ToAPIGatewayV1(stored, true))
}
