package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem/idemstream"
)

// streamRetryDelay is how long a shard waits before it retries a batch
// from the record its last answer named (or, after a crash, from its
// checkpoint): the event source mapping's retry.
const streamRetryDelay = 30 * time.Second

// The stream ways in: Kinesis Data Streams and DynamoDB Streams, each
// with effects outside DynamoDB (Run) and DynamoDB writes (Transact).
var streamWays = []*way{
	{name: "idemstream.Kinesis.Run", source: stream, leaseWhileRunning: true, lambda: true, retryFailed: true, deliverBatch: deliverStream(kinesis, false)},
	{name: "idemstream.Kinesis.Transact", source: stream, dbEffect: true, transaction: true, lambda: true, retryFailed: true, deliverBatch: deliverStream(kinesis, true)},
	{name: "idemstream.DynamoDB.Run", source: stream, leaseWhileRunning: true, lambda: true, retryFailed: true, deliverBatch: deliverStream(dynamoDB, false)},
	{name: "idemstream.DynamoDB.Transact", source: stream, dbEffect: true, transaction: true, lambda: true, retryFailed: true, deliverBatch: deliverStream(dynamoDB, true)},
}

func init() { ways = append(ways, streamWays...) }

// streamKind is which stream a way in reads.
type streamKind int

const (
	kinesis streamKind = iota
	dynamoDB
)

// seqOf is an actor's record's sequence number in its shard.
func seqOf(a *actor) string { return fmt.Sprintf("%021d", 1000+a.id) }

// streamBody is a record's payload.
func streamBody(a *actor) string {
	b, _ := json.Marshal(message{Tenant: a.principal(), Caller: a.caller, Key: a.key, Variant: a.variant, Poison: a.poison})
	return string(b)
}

// deliverStream hands a shard's batch to idemstream: Run with the
// outside effect, or Transact with the effect's writes, as the way says.
func deliverStream(kind streamKind, transact bool) func(ctx context.Context, w *world, c *call, as []*actor) []outcome {
	return func(ctx context.Context, w *world, c *call, as []*actor) []outcome {
		bySeq := map[string]*actor{}
		for _, a := range as {
			bySeq[seqOf(a)] = a
		}
		decode := func(seq, body string) (idemstream.Entry[sqsValue], error) {
			m, err := decodeMessage(events.SQSMessage{MessageId: seq, Body: body})
			c.mu.Lock()
			c.current = bySeq[seq] // records are applied one after another
			c.mu.Unlock()
			return idemstream.Entry[sqsValue]{Principal: m.Tenant, Key: m.Key, Value: sqsValue{Caller: m.Caller, Key: m.Key, Variant: m.Variant}}, err
		}
		effect := sequential[sqsValue](w, c)
		shared := func([]sqsValue, []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
			c.mu.Lock()
			a := c.current // one record a transaction, in order
			c.mu.Unlock()
			return w.streamWrite(ctx, c, a)
		}
		way := idemstream.Run(ctx, c.env.store, operation, effect)
		if transact {
			way = idemstream.Transact(ctx, c.env.store, operation, shared)
		}
		var failed []string
		var results []idemstream.Result
		switch kind {
		case kinesis:
			ev := events.KinesisEvent{}
			for _, a := range as {
				ev.Records = append(ev.Records, events.KinesisEventRecord{
					EventSourceArn: "arn:aws:kinesis:us-east-1:123456789012:stream/orders",
					Kinesis:        events.KinesisRecord{SequenceNumber: seqOf(a), Data: []byte(streamBody(a))},
				})
			}
			dec := func(r events.KinesisEventRecord) (idemstream.Entry[sqsValue], error) {
				return decode(r.Kinesis.SequenceNumber, string(r.Kinesis.Data))
			}
			var resp events.KinesisEventResponse
			resp, results = idemstream.Kinesis(ev, dec, way)
			for _, f := range resp.BatchItemFailures {
				failed = append(failed, f.ItemIdentifier)
			}
		case dynamoDB:
			ev := events.DynamoDBEvent{}
			for _, a := range as {
				ev.Records = append(ev.Records, events.DynamoDBEventRecord{
					EventName: "INSERT",
					Change: events.DynamoDBStreamRecord{SequenceNumber: seqOf(a), NewImage: map[string]events.DynamoDBAttributeValue{
						"body": events.NewStringAttribute(streamBody(a)),
					}},
				})
			}
			dec := func(r events.DynamoDBEventRecord) (idemstream.Entry[sqsValue], error) {
				return decode(r.Change.SequenceNumber, r.Change.NewImage["body"].String())
			}
			var resp events.DynamoDBEventResponse
			resp, results = idemstream.DynamoDB(ev, dec, way)
			for _, f := range resp.BatchItemFailures {
				failed = append(failed, f.ItemIdentifier)
			}
		}
		return w.streamOutcomes(as, failed, results)
	}
}

// streamWrite is the shared write of the record a transaction executes.
func (w *world) streamWrite(ctx context.Context, c *call, a *actor) ([]types.TransactWriteItem, error) {
	if w.take(&w.crashBefore) {
		c.env.crash("crash point: before the effect")
		return nil, context.Canceled
	}
	ex := w.begin(c, a)
	c.answered(a, ack)
	if err := w.work(ctx, ex); err != nil {
		return nil, err
	}
	return []types.TransactWriteItem{w.effectWrite(a.scope(), ex.n)}, nil
}

// streamOutcomes classifies idemstream's results with the answer the
// runtime got: the records before the one it names are done, and the
// shard goes on from that one (checkpoint), the rest untried.
func (w *world) streamOutcomes(as []*actor, failed []string, results []idemstream.Result) []outcome {
	outs := make([]outcome, len(as))
	from := len(as)
	switch {
	case len(failed) > 1:
		for i := range outs {
			outs[i] = outcome{class: classUnclassified, detail: fmt.Sprintf("the answer names %d records; a shard resumes from one", len(failed))}
		}
		return outs
	case len(failed) == 1:
		from = slices.IndexFunc(as, func(a *actor) bool { return seqOf(a) == failed[0] })
		if from < 0 {
			for i := range outs {
				outs[i] = outcome{class: classUnclassified, detail: "the answer names a record not in the batch: " + failed[0]}
			}
			return outs
		}
	}
	for i, a := range as {
		r := results[i]
		var out outcome
		switch {
		case r.SequenceNumber != seqOf(a):
			out = outcome{class: classUnclassified, detail: "result for another record: " + r.SequenceNumber}
		case errors.Is(r.Err, idemstream.ErrSkipped) && i > from:
			out = outcome{class: classUnavailable, untried: true, detail: "untried after an earlier failure"}
		default:
			out = w.recordOutcome(a, r.Outcome, r.Err, i < from)
		}
		out.checkpoint = i == from
		outs[i] = out
	}
	return outs
}

// shard is one shard of a stream: its records in order, and the
// checkpoint its consumer resumes from.
type shard struct {
	records  []*actor
	next     int
	attempts int // of the batch that starts at next
}

// runStream writes every actor's record to one of consumers shards
// (round robin, so the duplicates of a key meet from different shards),
// and has one consumer per shard, as Lambda does: it invokes the
// function with the next batch from the shard's checkpoint; on an answer
// that names a record, it resumes from that record (after
// streamRetryDelay); on a crash, from the checkpoint again; a record the
// batch failed at maxReceives times goes to the on-failure destination
// (dead), and the shard goes on past it.
func (w *world) runStream(actors []*actor) {
	shards := make([]*shard, consumers)
	for i := range shards {
		shards[i] = &shard{}
	}
	for i, a := range actors {
		s := shards[i%len(shards)]
		s.records = append(s.records, a)
	}
	var wg sync.WaitGroup
	for _, s := range shards {
		wg.Go(func() {
			time.Sleep(w.jitter(100 * time.Millisecond))
			for s.next < len(s.records) {
				batch := s.records[s.next:min(s.next+batchSize, len(s.records))]
				e := w.pool.acquire()
				outs := w.invoke(e, batch, w.cell.way.lambda, false, func(ctx context.Context, c *call) []outcome {
					return w.cell.way.deliverBatch(ctx, w, c, batch)
				})
				w.pool.release(e)
				from := len(batch) // a crash leaves every outcome unknown: retry from the checkpoint
				for i, out := range outs {
					if out.class == classUnknown {
						from = 0
						break
					}
					if out.checkpoint {
						from = i
						break
					}
				}
				for _, a := range batch[:from] {
					a.settled = true
				}
				if from > 0 {
					s.next, s.attempts = s.next+from, 0
				}
				if from == len(batch) {
					continue
				}
				if s.attempts++; s.attempts >= maxReceives {
					batch[from].dead = true
					s.next, s.attempts = s.next+from+1, 0
					continue
				}
				time.Sleep(streamRetryDelay)
			}
		})
	}
	wg.Wait()
}
