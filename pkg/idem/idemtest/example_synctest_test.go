package idemtest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// TestLeaseAndRetentionInFakeTime shows how to test your own lease and
// retention settings deterministically, to the millisecond, without
// sleeping: copy it into your tests and put your own options, keys and
// operation in.
//
// Inside a testing/synctest bubble, time is fake: it starts at midnight
// UTC, 1 January 2000, stands still while goroutines run, and jumps to
// the next timer when every goroutine of the bubble is blocked, so
// time.Sleep(12*time.Second) returns at once, exactly 12 s later. The
// store must be created inside the bubble (idemtest.NewServer) and
// reached in-process (HandlerClient: no listener, no network), so that
// everything it does, and every time.Now() the idem.Store reads, is on
// the bubble's clock. idem.Store has no clock option: the bubble is the
// clock.
//
// The two behaviours tested here are the ones an adopter configures:
//
//   - the lease: a Lambda invocation that dies holding a key (a timeout,
//     a crash) keeps it until its deadline plus the margin (WithLease);
//     a retry before then gets idem.ErrInFlight (a 409 with
//     Retry-After), one millisecond after it runs;
//   - the retention: a completed key replays its response until the
//     retention has passed (WithRetention, to the second: expires_at is
//     in epoch seconds), and runs again after it.
func TestLeaseAndRetentionInFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		server := idemtest.NewServer()
		db := server.HandlerClient()
		if err := idemtable.Create(ctx, db, "idempotency", idemtable.Layout{}); err != nil {
			t.Fatal(err)
		}
		const (
			timeout   = 10 * time.Second // the function's timeout: its invocations' deadline
			margin    = 2 * time.Second
			retention = 24 * time.Hour
		)
		store, err := idem.NewStore(db, "idempotency", idem.WithLease(time.Minute, margin), idem.WithRetention(retention))
		if err != nil {
			t.Fatal(err)
		}
		scope, err := idem.NewScope("POST /payments", "tenant-1", "key-1")
		if err != nil {
			t.Fatal(err)
		}
		runs := 0
		pay := func(context.Context) (idem.Response, error) {
			runs++
			return idem.Response{Status: 201, Body: fmt.Appendf(nil, `{"payment":%d}`, runs)}, nil
		}

		// An invocation claims the key and dies in the middle (here, a
		// panic; in production, a timeout or a crash).
		start := time.Now()
		func() {
			ictx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			defer func() { _ = recover() }()
			_, _ = store.Run(ictx, scope, "fp", func(context.Context) (idem.Response, error) { panic("the process dies") })
		}()

		// Until its lease ends, at the deadline plus the margin, the key
		// is in flight; one millisecond later the retry runs.
		time.Sleep(timeout + margin)
		_, err = store.Run(ctx, scope, "fp", pay)
		var inflight *idem.InFlightError
		if !errors.As(err, &inflight) || inflight.RetryAfter != time.Millisecond {
			t.Fatalf("at %v: %v, want in flight for 1 more ms", time.Since(start), err)
		}
		time.Sleep(time.Millisecond)
		res, err := store.Run(ctx, scope, "fp", pay)
		if err != nil || runs != 1 {
			t.Fatalf("at %v: %v (%s), %d runs; want the retry to run", time.Since(start), err, res.Outcome, runs)
		}

		// The completed key replays for the retention, to the end of the
		// second its expires_at names, and runs again after it.
		completed := time.Now()
		expires := time.Unix(completed.Add(retention).Unix(), 0)
		time.Sleep(time.Until(expires.Add(999 * time.Millisecond)))
		res, err = store.Run(ctx, scope, "fp", pay)
		if err != nil || res.Outcome != idem.OutcomeReplayed || string(res.Response.Body) != `{"payment":1}` {
			t.Fatalf("%v after the completion: %s %s, %v; want the replay", time.Since(completed), res.Outcome, res.Response.Body, err)
		}
		time.Sleep(time.Millisecond)
		res, err = store.Run(ctx, scope, "fp", pay)
		if err != nil || res.Outcome != idem.OutcomeExecuted || runs != 2 {
			t.Fatalf("%v after the completion: %s, %v, %d runs; want the key to run again", time.Since(completed), res.Outcome, err, runs)
		}
	})
}
