package relay

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/outbox/bridge"
)

// acceptingBus accepts every entry and keeps nothing, so the benchmark
// measures the handler and publisher rather than the fake.
type acceptingBus struct{ out *eventbridge.PutEventsOutput }

func (b acceptingBus) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	return &eventbridge.PutEventsOutput{Entries: b.out.Entries[:len(in.Entries)]}, nil
}

// BenchmarkHandle pushes batches of stream records through the handler
// into an in-process publisher and reports records per second and heap
// allocations per record, the outcome log line included (JSON, discarded).
func BenchmarkHandle(b *testing.B) {
	for _, size := range []int{10, 100} {
		b.Run(fmt.Sprintf("eventbridge/batch=%d", size), func(b *testing.B) {
			bus := acceptingBus{out: &eventbridge.PutEventsOutput{Entries: make([]ebtypes.PutEventsResultEntry, bridge.MaxEntriesPerCall)}}
			pub, err := bridge.New(bus, bridge.Config{Bus: testBus, Source: testSource})
			require.NoError(b, err)
			benchHandle(b, NewHandler(pub, slog.New(slog.NewJSONHandler(io.Discard, nil)), recorder(b, io.Discard), nil, "bus", ""), size)
		})
		b.Run(fmt.Sprintf("jsonlines/batch=%d", size), func(b *testing.B) {
			pub := outbox.NewJSONLinesPublisher(io.Discard)
			benchHandle(b, NewHandler(pub, slog.New(slog.NewJSONHandler(io.Discard, nil)), recorder(b, io.Discard), nil, "bus", ""), size)
		})
	}
}

func benchHandle(b *testing.B, h *Handler, size int) {
	ev, _ := batch(b, size)
	ctx := b.Context()
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n := 0
	for b.Loop() {
		resp, err := h.Handle(ctx, ev)
		if err != nil || len(resp.BatchItemFailures) > 0 {
			b.Fatalf("handle: %v %v", err, resp.BatchItemFailures)
		}
		n++
	}
	runtime.ReadMemStats(&after)
	records := float64(n * size)
	b.ReportMetric(records/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/records, "allocs/record")
}
