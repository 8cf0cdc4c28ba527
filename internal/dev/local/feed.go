package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/internal/dev/embedded"
	"github.com/idemlambda/idemlambda/internal/dev/streampoll"
	"github.com/idemlambda/idemlambda/internal/dev/tables"
)

// feed stands in for DynamoDB Streams on the embedded store: it turns the
// outbox puts the store reports into INSERT stream records and hands them
// to the relay in batches, one shard in order, retrying from the record a
// failed batch names, as the event source mapping does.
type feed struct {
	table     string
	streamARN string
	batchSize int
	retry     time.Duration
	log       *slog.Logger

	mu    sync.Mutex
	wake  chan struct{} // signalled when records arrive
	queue []events.DynamoDBEventRecord
	seq   uint64
}

func newFeed(table string, batchSize int, log *slog.Logger) *feed {
	return &feed{
		table: table, batchSize: batchSize, retry: 200 * time.Millisecond, log: log,
		streamARN: "arn:aws:dynamodb:local:000000000000:table/" + table + "/stream/embedded",
		wake:      make(chan struct{}, 1),
	}
}

// put is the embedded store's OnPut callback; it runs in commit order.
func (f *feed) put(p embedded.Put) {
	if p.Table != f.table {
		return
	}
	keys := map[string]events.DynamoDBAttributeValue{}
	for _, k := range []string{tables.Outbox.HashKey, tables.Outbox.RangeKey} {
		if v, ok := p.Item[k]; ok {
			keys[k] = v
		}
	}
	f.mu.Lock()
	f.seq++
	f.queue = append(f.queue, events.DynamoDBEventRecord{
		AWSRegion: "local", EventID: randomID(), EventName: "INSERT", EventSource: "aws:dynamodb",
		EventVersion: "1.1", EventSourceArn: f.streamARN,
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: time.Now()},
			Keys:                        keys, NewImage: p.Item,
			SequenceNumber: fmt.Sprintf("%021d", f.seq), StreamViewType: "NEW_IMAGE",
		},
	})
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// poll adds the records stream returns, every tenth of a second, until
// ctx ends.
func (f *feed) poll(ctx context.Context, stream func() []events.DynamoDBEventRecord) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if recs := stream(); len(recs) > 0 {
			f.mu.Lock()
			f.queue = append(f.queue, recs...)
			f.mu.Unlock()
			select {
			case f.wake <- struct{}{}:
			default:
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// run delivers batches until ctx ends.
func (f *feed) run(ctx context.Context, handler streampoll.Handler) {
	for {
		batch := f.next()
		if len(batch) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-f.wake:
				continue
			}
		}
		resp, err := handler(ctx, events.DynamoDBEvent{Records: batch})
		done := settled(batch, resp, err)
		f.settle(done)
		if done < len(batch) {
			f.log.WarnContext(ctx, "outbox relay batch failed; retrying from the failed record",
				"records", len(batch), "delivered", done, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(f.retry):
			}
		}
	}
}

// next takes up to batchSize records off the queue head without removing
// them: they leave only when settled.
func (f *feed) next() []events.DynamoDBEventRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.queue[:min(len(f.queue), f.batchSize)])
}

// settle removes the first done records of the queue.
func (f *feed) settle(done int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = f.queue[done:]
}

// idle reports whether every record so far has been delivered.
func (f *feed) idle() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue) == 0
}

// settled counts the leading records of batch that need no retry: all of
// them, none on a handler error, or those before the earliest failure.
func settled(batch []events.DynamoDBEventRecord, resp events.DynamoDBEventResponse, err error) int {
	if err != nil {
		return 0
	}
	done := len(batch)
	for _, f := range resp.BatchItemFailures {
		i := slices.IndexFunc(batch, func(r events.DynamoDBEventRecord) bool {
			return r.Change.SequenceNumber == f.ItemIdentifier
		})
		if i < 0 {
			return 0 // an identifier not in the batch: retry it whole
		}
		done = min(done, i)
	}
	return done
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
