package idemconform_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemconform"
)

// A way written outside the library: an adopter's wrapper around Store.Run
// for a request of its own, delivered one request an invocation. A test
// runs it through every fault with idemconform.Run(t, way), as
// test/adopter in the repository does for an AppSync resolver.
func Example() {
	way := idemconform.Way{
		Name:     "myteam.Wrapper",
		Source:   idemconform.Requests,
		Effect:   idemconform.Outside,
		Deadline: idemconform.DeadlineLambda,
		Deliver: func(ctx context.Context, inv *idemconform.Invocation) []idemconform.Answer {
			r := inv.Requests()[0]
			scope, err := idem.NewScope("POST /orders", r.Principal(), r.Key())
			if err != nil {
				return []idemconform.Answer{idemconform.FromCall(idem.OutcomeRejected, err, "")}
			}
			fp, _ := idem.Fingerprint(r.Payload())
			res, err := inv.Store().Run(ctx, scope, fp, func(ctx context.Context) (idem.Response, error) {
				reply, err := inv.Effect(ctx, r)
				return reply.Response(), err
			})
			return []idemconform.Answer{idemconform.FromCall(res.Outcome, err, idemconform.ResponseAnswer(res.Response))}
		},
	}
	fmt.Println(way.Name, way.Source)
	// Output: myteam.Wrapper requests
}

// FromHTTP reads an HTTP answer as a client retrying with the same key
// does: a 409 problem is in flight, to be retried after Retry-After.
func ExampleFromHTTP() {
	h := http.Header{}
	h.Set("Content-Type", "application/problem+json")
	h.Set("Retry-After", "2")
	a := idemconform.FromHTTP(http.StatusConflict, h, []byte(`{"status":409}`))
	fmt.Println(a.Class, a.RetryAfter)
	// Output: in-flight 2s
}

// FromCall reads what the store returned: a key used with another
// payload is key reuse, which settles the request.
func ExampleFromCall() {
	a := idemconform.FromCall(idem.OutcomeKeyReuse, fmt.Errorf("order 42: %w", idem.ErrKeyReuse), "")
	fmt.Println(a.Class)
	// Output: key-reuse
}

// The same way across the Regions of a simulated global table: on MREC
// with homes (idem.WithHomes), a test fails on any key run twice; the
// baseline (idem.WithRegion) shows how many a Region's own claims run
// twice under lag; on MRSC, a test fails on any violation, transaction
// or write left waiting. A test runs them with idemconform.RunRegions(t,
// way, idemconform.Homes), idemconform.Local and idemconform.MRSC.
func ExampleRunRegions() {
	fmt.Println(idemconform.Homes, idemconform.Local, idemconform.MRSC)
	// Output: homes local mrsc
}
