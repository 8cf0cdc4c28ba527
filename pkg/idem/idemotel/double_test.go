package idemotel_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemglobal"
	"github.com/idemlambda/idemlambda/pkg/idem/idemotel"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// A key run in two Regions of an MREC global table (stores that claim in
// their own Region, under a lag) is an idem.double_execution span of the
// detector's invocation, failed, with both executions' Regions, epochs
// and statuses and the report's ID; the scope hash only with a hasher,
// and never the key, the principal or the scope's ID.
func TestADoubleExecutionIsASpanOfTheDetector(t *testing.T) {
	t.Parallel()
	const east, west = "us-east-1", "us-west-2"
	const principal, key = "alice@example.com", "k-personal-4f2a9c"
	hasher, err := idemtrace.NewScopeHasher([]byte("0123456789abcdef0123456789abcdef"))
	must.NoError(t, err)
	for _, keyed := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Regions: []string{east, west}, Lag: time.Second})
			must.NoError(t, err)
			defer g.Close()
			ctx := context.Background()
			must.NoError(t, idemtable.Create(ctx, g.Region(east).HandlerClient(), "idempotency", idemtable.Layout{}))
			sc, err := idem.NewScope("POST /payments", principal, key)
			must.NoError(t, err)
			for _, r := range []string{east, west} {
				s, err := idem.NewStore(g.Region(r).HandlerClient(), "idempotency", idem.WithRegion(r))
				must.NoError(t, err)
				_, err = s.Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) { return idem.Response{Body: []byte(key)}, nil })
				must.NoError(t, err, r)
			}
			time.Sleep(2 * time.Second) // both claims replicated: east's overwritten by west's

			spans := tracetest.NewSpanRecorder()
			var opts []idemotel.Option
			if keyed {
				opts = append(opts, idemotel.WithScopeHasher(hasher))
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			det := &idemglobal.Detector{Trace: idemotel.NewTrace(tp, opts...)}
			invocation, span := tp.Tracer("test").Start(ctx, "detector invocation")
			var batch []lambdaevents.DynamoDBEventRecord
			for _, rec := range g.Region(east).Stream("idempotency").Read() {
				batch = append(batch, rec.DynamoDBEventRecord)
			}
			reports := det.Detect(invocation, batch)
			span.End()
			must.Len(t, reports, 1, "east's stream shows its claim overwritten")

			ended := spans.Ended()
			double := one(t, ended, "idem.double_execution")
			childOf(t, double, one(t, ended, "detector invocation"))
			check.Equal(t, codes.Error, double.Status().Code)
			a := double.Attributes()
			check.Equal(t, "POST /payments", attr(a, idemotel.AttrOperation))
			check.Equal(t, east, attr(a, idemotel.AttrRegion))
			check.Equal(t, reports[0].ID, attr(a, idemotel.AttrDoubleID))
			check.Equal(t, east, attr(a, idemotel.AttrOverwrittenOrigin))
			check.Equal(t, west, attr(a, idemotel.AttrOverwritingOrigin))
			check.Equal(t, "COMPLETED", attr(a, idemotel.AttrOverwrittenStatus))
			check.Equal(t, "COMPLETED", attr(a, idemotel.AttrOverwritingStatus))
			check.Equal(t, "0", attr(a, idemotel.AttrOverwrittenEpoch))
			if keyed {
				check.Equal(t, hasher.Hash(sc.ID()), attr(a, idemotel.AttrScopeHash))
			} else {
				check.Equal(t, "", attr(a, idemotel.AttrScopeHash), "no scope hash without a hasher")
			}
			for _, kv := range a {
				for _, f := range []string{key, principal, sc.ID()} {
					check.False(t, strings.Contains(kv.Value.String(), f), "%s holds %q", kv.Key, f)
				}
			}
		})
	}
}
