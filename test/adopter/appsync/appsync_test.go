package appsync_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemconform"
	"github.com/idemlambda/idemlambda/pkg/idem/idemprincipal"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/test/adopter/appsync"
)

// The adapter through the library's conformance suite, as the library's
// own ways in go through it: every fault, every layout and mode.
func TestConformance(t *testing.T) {
	idemconform.Run(t, idemconform.Way{
		Name:     "appsync.Resolver",
		Source:   idemconform.Requests, // a GraphQL client retrying the mutation with its key
		Effect:   idemconform.Outside,
		Deadline: idemconform.DeadlineLambda,
		Deliver:  deliver,
	})
}

// deliver sends the request as AppSync would: the mutation's arguments,
// the caller's Cognito identity (none when its principal is ""), the key
// in the request's headers.
func deliver(ctx context.Context, inv *idemconform.Invocation) []idemconform.Answer {
	r := inv.Requests()[0]
	resolve, err := appsync.Resolver(inv.Store(), func(ctx context.Context, _ idemconform.Payload) (idemconform.Reply, error) {
		return inv.Effect(ctx, r)
	})
	if err != nil {
		return []idemconform.Answer{{Class: idemconform.Unclassified, Detail: "appsync.Resolver: " + err.Error()}}
	}
	args, _ := json.Marshal(r.Payload())
	v, err := resolve(ctx, event(args, r.Principal(), r.Key()))
	return []idemconform.Answer{answer(v, err)}
}

func event(args []byte, sub, key string) appsync.Event {
	return appsync.Event{
		Arguments: args,
		Identity:  &appsync.Identity{AppSyncCognitoIdentity: events.AppSyncCognitoIdentity{Sub: sub, Issuer: "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_pool"}},
		Request:   appsync.Request{Headers: map[string]string{appsync.HeaderKey: key}},
		Info:      appsync.Info{FieldName: "createOrder", ParentTypeName: "Mutation"},
	}
}

var retryAfter = regexp.MustCompile(`retry after (\d+) s`)

// answer is what the GraphQL client saw: the data, or an error whose
// errorType says what happened.
func answer(v idemconform.Reply, err error) idemconform.Answer {
	var e messages.InvokeResponse_Error
	switch {
	case err == nil:
		return idemconform.Answer{Class: idemconform.OK, Body: v.JSON()}
	case errors.Is(err, idemconform.ErrDeclined):
		return idemconform.Answer{Class: idemconform.Failed, Err: err, Redeliver: true, Detail: err.Error()}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// The resolver's work was cut short: the key is released.
		return idemconform.Answer{Class: idemconform.Unavailable, Detail: err.Error()}
	case errors.As(err, &e):
		a := idemconform.Answer{Detail: e.Type + ": " + e.Message}
		switch e.Type {
		case appsync.TypeConflict:
			a.Class = idemconform.InFlight
			if m := retryAfter.FindStringSubmatch(e.Message); m != nil {
				s, _ := strconv.Atoi(m[1])
				a.RetryAfter = time.Duration(s) * time.Second
			}
		case appsync.TypeUnavailable:
			a.Class = idemconform.Unavailable
		case appsync.TypeKeyReuse:
			a.Class = idemconform.KeyReuse
		case appsync.TypeBadRequest, appsync.TypeForbidden:
			a.Class = idemconform.Refused
		default:
			a.Class = idemconform.Unclassified
		}
		return a
	}
	return idemconform.Answer{Class: idemconform.Unclassified, Detail: err.Error()}
}

// The adapter's own rules, beside the suite: who the caller is, and the
// errors a client sees.
func TestPrincipal(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   *appsync.Identity
		want string
	}{
		// The spellings of API Gateway's PrincipalV2: one user, one principal.
		{"cognito", &appsync.Identity{AppSyncCognitoIdentity: events.AppSyncCognitoIdentity{Sub: "u-1", Issuer: "https://issuer"}}, idemprincipal.JWT("https://issuer", "sub", "u-1")},
		{"iam", &appsync.Identity{UserARN: "arn:aws:iam::123456789012:user/ci"}, "iam:arn:aws:iam::123456789012:user/ci"},
		{"identity pool", &appsync.Identity{UserARN: "arn:aws:sts::1:assumed-role/pool/CognitoIdentityCredentials", CognitoIdentityPoolID: "eu-west-1:pool", CognitoIdentityID: "eu-west-1:ada"},
			idemprincipal.CognitoIdentity("eu-west-1:pool", "eu-west-1:ada")},
		{"lambda authorizer", &appsync.Identity{ResolverContext: map[string]any{"principalId": "tenant-7"}}, `lambda:principalId="tenant-7"`},
		{"api key", nil, ""},
		{"empty lambda context", &appsync.Identity{ResolverContext: map[string]any{"principalId": ""}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := appsync.Principal(tc.id)
			if got != tc.want || (tc.want == "") != (err != nil) {
				t.Errorf("Principal = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestResolverAnswersOnceAndRefusesWhatItCannotScope(t *testing.T) {
	db := idemtest.New(t).Client()
	if err := idemtable.Create(context.Background(), db, "idempotency", idemtable.Layout{}); err != nil {
		t.Fatal(err)
	}
	store, err := idem.NewStore(db, "idempotency")
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	resolve, err := appsync.Resolver(store, func(_ context.Context, args struct{ Cents int }) (map[string]int, error) {
		runs++
		return map[string]int{"cents": args.Cents, "run": runs}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := resolve(ctx, event([]byte(`{"Cents":5}`), "alice", "order-1"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := resolve(ctx, event([]byte(`{"Cents":5}`), "alice", "order-1"))
	if err != nil || again["run"] != first["run"] || runs != 1 {
		t.Errorf("a retry: %v %v after %d runs; want the first answer %v, one run", again, err, runs, first)
	}
	for _, tc := range []struct {
		name     string
		ev       appsync.Event
		wantType string
	}{
		{"other arguments", event([]byte(`{"Cents":6}`), "alice", "order-1"), appsync.TypeKeyReuse},
		{"no key", event([]byte(`{}`), "alice", ""), appsync.TypeBadRequest},
		{"no caller", event([]byte(`{}`), "", "order-2"), appsync.TypeForbidden},
	} {
		_, err := resolve(ctx, tc.ev)
		var e messages.InvokeResponse_Error
		if !errors.As(err, &e) || e.Type != tc.wantType {
			t.Errorf("%s: %v; want errorType %s", tc.name, err, tc.wantType)
		}
	}
	if runs != 1 {
		t.Errorf("the resolver ran %d times; want once", runs)
	}
}

// With WithWait, a duplicate that comes while the first mutation runs
// waits for its answer (idem.CallWait) and gets the data, not
// IdempotencyConflict; the resolver runs once.
func TestWithWaitAnswersADuplicateWithTheFirstAnswer(t *testing.T) {
	db := idemtest.New(t).Client()
	if err := idemtable.Create(context.Background(), db, "idempotency", idemtable.Layout{}); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{}, 1) // the duplicate waits for the holder
	store, err := idem.NewStore(db, "idempotency", idem.WithTrace(&idemtrace.Trace{
		WaitStart: func(ctx context.Context, i idemtrace.WaitStartInfo) context.Context {
			if i.Reason == idemtrace.WaitHolder {
				select {
				case waiting <- struct{}{}:
				default:
				}
			}
			return ctx
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	resolve, err := appsync.Resolver(store, func(context.Context, struct{ Cents int }) (map[string]int32, error) {
		n := runs.Add(1)
		close(started)
		<-release
		return map[string]int32{"run": n}, nil
	}, appsync.WithWait(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := appsync.Resolver(store, func(context.Context, struct{}) (int, error) { return 0, nil }, appsync.WithWait(-time.Second)); err != nil {
		t.Errorf("a wait of 0 or less turns waiting off: %v", err)
	}

	ctx := context.Background()
	type answer struct {
		v   map[string]int32
		err error
	}
	first := make(chan answer, 1)
	go func() {
		v, err := resolve(ctx, event([]byte(`{"Cents":5}`), "alice", "order-w"))
		first <- answer{v, err}
	}()
	<-started
	dup := make(chan answer, 1)
	go func() {
		v, err := resolve(ctx, event([]byte(`{"Cents":5}`), "alice", "order-w"))
		dup <- answer{v, err}
	}()
	<-waiting
	close(release)
	a, b := <-first, <-dup
	if a.err != nil || b.err != nil {
		t.Fatalf("first %v, duplicate %v; want both answered", a.err, b.err)
	}
	if a.v["run"] != 1 || b.v["run"] != 1 || runs.Load() != 1 {
		t.Errorf("first %v, duplicate %v after %d runs; want the first answer twice, one run", a.v, b.v, runs.Load())
	}
}
