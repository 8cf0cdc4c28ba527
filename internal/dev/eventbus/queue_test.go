package eventbus

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/outbox"
)

// recorder is a Handler that fails the messages fail says, and records
// every delivery.
type recorder struct {
	mu       sync.Mutex
	batches  []int
	receives map[string][]int // message id -> ApproximateReceiveCount per delivery
	fail     func(m events.SQSMessage) bool
	err      func(call int) error
}

func (r *recorder) handle(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, len(ev.Records))
	if r.err != nil {
		if err := r.err(len(r.batches)); err != nil {
			for _, m := range ev.Records {
				n, _ := strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
				r.receives[m.MessageId] = append(r.receives[m.MessageId], n)
			}
			return events.SQSEventResponse{}, err
		}
	}
	var resp events.SQSEventResponse
	for _, m := range ev.Records {
		n, _ := strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
		r.receives[m.MessageId] = append(r.receives[m.MessageId], n)
		if r.fail != nil && r.fail(m) {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
		}
	}
	return resp, nil
}

func (r *recorder) snapshot() ([]int, map[string][]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]int{}
	for k, v := range r.receives {
		out[k] = append([]int(nil), v...)
	}
	return append([]int(nil), r.batches...), out
}

// run starts q with a short visibility, and stops it when the test ends.
func run(t *testing.T, r *recorder) (*Queue, context.CancelFunc) {
	t.Helper()
	q := NewQueue(r.handle, slog.New(slog.DiscardHandler))
	q.visibility = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return q, func() { cancel(); <-done }
}

func publish(t *testing.T, q *Queue, n int) {
	t.Helper()
	var evs []outbox.Event
	for i := range n {
		e, err := outbox.NewEvent("idemlambda.products", "ProductCreated", fmt.Sprintf("p-%d", i), []byte(`{}`), time.Now())
		require.NoError(t, err)
		evs = append(evs, e)
	}
	res, err := q.Publish(context.Background(), evs)
	require.NoError(t, err)
	require.Equal(t, n, res.Published)
}

func TestQueueDeliversInBatchesOfTenOnce(t *testing.T) {
	t.Parallel()
	r := &recorder{receives: map[string][]int{}}
	q, _ := run(t, r)
	publish(t, q, 25)
	require.Eventually(t, q.Idle, time.Minute, 5*time.Millisecond)
	batches, receives := r.snapshot()
	total := 0
	for _, b := range batches {
		assert.LessOrEqual(t, b, 10)
		total += b
	}
	assert.Equal(t, 25, total)
	assert.Len(t, receives, 25)
	for id, rs := range receives {
		assert.Equal(t, []int{1}, rs, "message %s delivered once", id)
	}
	assert.Empty(t, q.Dead())
}

// A reported failure comes back after the visibility timeout with its
// receive count up; at the fifth receive it goes to the dead-letter list.
func TestQueueRedeliversFailuresThenDeadLetters(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]int{}
	var poison string
	r := &recorder{receives: map[string][]int{}, fail: func(m events.SQSMessage) bool {
		mu.Lock()
		defer mu.Unlock()
		if poison == "" {
			poison = m.MessageId // the first message never succeeds
		}
		seen[m.MessageId]++
		return m.MessageId == poison || seen[m.MessageId] <= 2 // the others succeed on the third receive
	}}
	q, _ := run(t, r)
	publish(t, q, 3)
	require.Eventually(t, q.Idle, time.Minute, 5*time.Millisecond)
	_, receives := r.snapshot()
	require.Len(t, receives, 3)
	for id, rs := range receives {
		if id == poison {
			assert.Equal(t, []int{1, 2, 3, 4, 5}, rs, "the poison message: 5 receives")
		} else {
			assert.Equal(t, []int{1, 2, 3}, rs, "message %s: redelivered until it succeeds", id)
		}
	}
	dead := q.Dead()
	require.Len(t, dead, 1)
	assert.Equal(t, poison, dead[0].MessageId)
}

// An invocation error (a timeout, a crash) redelivers the whole batch.
func TestQueueRedeliversTheWholeBatchOnAnInvocationError(t *testing.T) {
	t.Parallel()
	r := &recorder{receives: map[string][]int{}, err: func(call int) error {
		if call == 1 {
			return fmt.Errorf("Task timed out")
		}
		return nil
	}}
	q, _ := run(t, r)
	publish(t, q, 4)
	require.Eventually(t, q.Idle, time.Minute, 5*time.Millisecond)
	_, receives := r.snapshot()
	require.Len(t, receives, 4)
	for id, rs := range receives {
		assert.Equal(t, []int{1, 2}, rs, "message %s", id)
	}
}

// Stopped during a batch (Ctrl-C under make run), the queue hands no
// further batch over: a delivery with a cancelled context would only
// spend a receive of every message in it.
func TestQueueStopsDelivering(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	calls, afterStop := 0, 0
	q := NewQueue(func(c context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if c.Err() != nil {
			afterStop++
		}
		cancel() // the stop arrives while the first batch is in the handler
		return events.SQSEventResponse{}, nil
	}, slog.New(slog.DiscardHandler))
	publish(t, q, 25) // three batches due at once
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after its context ended")
	}
	assert.Equal(t, 1, calls, "only the batch in flight at the stop")
	assert.Zero(t, afterStop, "no batch handed over with a cancelled context")
	assert.False(t, q.Idle(), "the undelivered messages are still queued")
}

// An event's trace header is its message's AWSTraceHeader on every
// receive, as a rule delivers a traced PutEvents entry to SQS; an
// untraced event's message has none.
func TestQueueCarriesTheTraceHeaderAsAWSTraceHeader(t *testing.T) {
	t.Parallel()
	const h = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	var mu sync.Mutex
	got := map[string][]string{} // subject -> AWSTraceHeader per delivery
	q := NewQueue(func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		var resp events.SQSEventResponse
		for _, m := range ev.Records {
			subject := "untraced"
			if strings.Contains(m.Body, `"subject":"traced"`) {
				subject = "traced"
			}
			got[subject] = append(got[subject], m.Attributes["AWSTraceHeader"])
			if len(got[subject]) == 1 { // fail the first receive: the header must survive redelivery
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			}
		}
		return resp, nil
	}, slog.New(slog.DiscardHandler))
	q.visibility = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	traced, err := outbox.NewEvent("idemlambda.products", "ProductCreated", "traced", []byte(`{}`), time.Now())
	require.NoError(t, err)
	traced.TraceHeader = h
	untraced, err := outbox.NewEvent("idemlambda.products", "ProductCreated", "untraced", []byte(`{}`), time.Now())
	require.NoError(t, err)
	_, err = q.Publish(context.Background(), []outbox.Event{traced, untraced})
	require.NoError(t, err)
	require.Eventually(t, q.Idle, time.Minute, 5*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[string][]string{"traced": {h, h}, "untraced": {"", ""}}, got)
}
