package sellersqs_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/sellers/sellersqs"
)

// maxReceives is the queue's redrive policy: a message received this many
// times and failed again moves to the dead-letter queue.
const maxReceives = 5

// queueRun is what a simulated queue saw while it drained.
type queueRun struct {
	Batches, Handled, Redelivered int
	DeadLettered                  []string
}

// drain plays an SQS queue with an event source mapping: workers
// concurrent invocations take batches (of batchSize(rng) messages, or
// what is left) until the queue is empty, and a message reported failed
// comes back, as SQS redelivers it after its visibility timeout, until its
// fifth receive; then the redrive policy would dead-letter it. rng is only
// used under the queue's lock.
func (f *fixture) drain(t testing.TB, deliveries []events.SQSMessage, workers int, rng *rand.Rand, batchSize func(*rand.Rand) int) queueRun {
	t.Helper()
	consumers := make([]*sellersqs.Consumer, workers)
	for i := range consumers {
		consumers[i] = f.consumer
	}
	return f.drainWith(t, deliveries, consumers, rng, batchSize)
}

// drainWith is drain with one invocation at a time per consumer, as each
// Lambda execution environment has its own process (and its own cache).
func (f *fixture) drainWith(t testing.TB, deliveries []events.SQSMessage, consumers []*sellersqs.Consumer, rng *rand.Rand, batchSize func(*rand.Rand) int) queueRun {
	t.Helper()
	type queued struct {
		msg      events.SQSMessage
		receives int
	}
	var (
		mu    sync.Mutex
		cond  = sync.NewCond(&mu)
		queue = make([]queued, 0, len(deliveries))
		busy  int
		run   queueRun
	)
	for _, d := range deliveries {
		queue = append(queue, queued{msg: d, receives: 1})
	}
	var wg sync.WaitGroup
	for _, c := range consumers {
		wg.Go(func() {
			for {
				mu.Lock()
				for len(queue) == 0 && busy > 0 {
					cond.Wait()
				}
				if len(queue) == 0 {
					mu.Unlock()
					return
				}
				n := min(batchSize(rng), len(queue))
				batch := queue[:n:n]
				queue = queue[n:]
				busy++
				run.Batches++
				run.Handled += n
				mu.Unlock()
				msgs := make([]events.SQSMessage, n)
				for i, q := range batch {
					msgs[i] = q.msg
				}
				failed := map[string]bool{}
				resp, err := c.Handle(context.Background(), events.SQSEvent{Records: msgs})
				require.NoError(t, err, "the consumer never fails a whole batch")
				for _, id := range failedIDs(resp) {
					failed[id] = true
				}
				mu.Lock()
				for _, q := range batch {
					switch {
					case !failed[q.msg.MessageId]:
					case q.receives >= maxReceives:
						run.DeadLettered = append(run.DeadLettered, q.msg.MessageId)
					default:
						run.Redelivered++
						queue = append(queue, queued{msg: q.msg, receives: q.receives + 1})
					}
				}
				busy--
				cond.Broadcast()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return run
}
