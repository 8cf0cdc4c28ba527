package sellersqs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemshard"
	"github.com/idemlambda/idemlambda/pkg/idem/idemsqs"
)

// Operation is the idempotency scope's operation of the counter: with the
// event's source as principal and its CloudEvent id as key, a delivery of
// the same event finds the same record.
const Operation = "sellerstats ProductCreated"

// batches counts the events of SQS batches on the sellers table, each
// once: a batch's idempotency records and the counter's writes (one
// update per seller, of one of its shards) commit in one
// TransactWriteItems (pkg/idem/idemsqs's Consumer.Transact).
type batches struct {
	store   *idem.Store
	counter *sellers.Counter
	// shards is where this consumer's batches write: each keeps one
	// shard of its sellers, and moves off one another transaction holds.
	shards *idemshard.Shards
}

func newBatches(store *idem.Store, counter *sellers.Counter) *batches {
	return &batches{store: store, counter: counter, shards: idemshard.New(counter.Shards)}
}

// apply counts the events an SQS batch carries, each once, with
// pkg/idem/idemsqs: decode reads each message's event (an error is that
// message's alone), and the batch's new events commit in one
// TransactWriteItems, each event's idempotency record with the counter's
// writes for them. Events delivered before are acknowledged without
// changing anything, and the rest commit in one more transaction
// (Store.ExecuteBatch, which also retries conflicts with full jitter
// within ctx). It returns one Result per message, in order; a message
// fails only for its own sake. Err wraps decode's error,
// sellers.ErrPoison (an event id that is no key), sellers.ErrOverflow,
// idem.ErrKeyReuse (another event under the same id: never counted),
// idem.ErrInFlight, or a store error (idem.IsUnavailable tells one a
// retry can fix).
func (b *batches) apply(ctx context.Context, ev events.SQSEvent, decode func(events.SQSMessage) (sellers.ProductCreated, error)) []idemsqs.Result {
	values := make(map[string]sellers.Listing, len(ev.Records)) // by messageId
	entry := func(m events.SQSMessage) (idemsqs.Entry[sellers.Listing], error) {
		pc, err := decode(m)
		if err != nil {
			return idemsqs.Entry[sellers.Listing]{}, err
		}
		l := sellers.ListingOf(pc)
		values[m.MessageId] = l
		return idemsqs.Entry[sellers.Listing]{Principal: pc.Source, Key: pc.EventID, Value: l}, nil
	}
	// ExecuteBatch calls the shared writes once per transaction it sends,
	// one after another: each updates the batch's shard of its sellers,
	// and after one cancelled because another transaction held that
	// shard, the next goes to another (pkg/idem/idemshard). A Lambda
	// execution environment runs one batch at a time, so it keeps writing
	// to one shard, and environments spread out as their conflicts push
	// them apart.
	consumer, err := idemsqs.New(b.store, Operation, entry)
	if err != nil { // a store, the operation and entry: never
		res := make([]idemsqs.Result, len(ev.Records))
		for i, m := range ev.Records {
			res[i] = idemsqs.Result{MessageID: m.MessageId, Outcome: idem.OutcomeError, Err: err}
		}
		return res
	}
	batch := b.shards.Batch()
	defer batch.Done()
	_, res := consumer.Transact(ctx, ev, func(executing []sellers.Listing, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
		home := batch.Shard(heldShard(contended, b.counter.Table))
		return b.counter.Writes(executing, func(string) int { return home }), nil
	})
	for i, r := range res {
		m := ev.Records[i]
		if overflowed(r.Err) {
			// The shard it met is full; another may not be.
			r = b.onEveryShard(ctx, m, consumer)
		}
		switch v := values[m.MessageId]; {
		case overflowed(r.Err):
			r.Err = fmt.Errorf("%w: seller %s, %s total or product count: %w", sellers.ErrOverflow, v.SellerID, v.Currency, r.Err)
		case r.Outcome == idem.OutcomeRejected && errors.Is(r.Err, idem.ErrInvalidKey):
			r.Err = fmt.Errorf("%w: %w", sellers.ErrPoison, r.Err)
		}
		res[i] = r
	}
	return res
}

// overflowed reports whether err is a seller update's own condition
// failing alone (pkg/idem's ErrConditionFailed): the only condition of
// the counter's writes is the overflow guard.
func overflowed(err error) bool { return errors.Is(err, idem.ErrConditionFailed) }

// onEveryShard counts one message's event that the shard it met could not
// take without passing its cap: it tries each shard of the seller in turn
// (one transaction each, from a random one), until one takes it, or the
// event turns out to be counted meanwhile, or fails for another reason.
// Refused by all, the event can never be counted: every shard's total only
// grows. With shards of 38 digits (sellers.MaxShardValue) that takes more
// than 10^26 events at the largest price on each; a lowered cap (the
// tests') reaches it.
func (b *batches) onEveryShard(ctx context.Context, m events.SQSMessage, consumer *idemsqs.Consumer[sellers.Listing]) idemsqs.Result {
	var r idemsqs.Result
	n := b.counter.Shards
	first := rand.IntN(n)
	one := events.SQSEvent{Records: []events.SQSMessage{m}}
	for k := range n {
		shard := (first + k) % n
		_, res := consumer.Transact(ctx, one, func(executing []sellers.Listing, _ []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
			return b.counter.Writes(executing, func(string) int { return shard }), nil
		})
		if r = res[0]; !overflowed(r.Err) {
			return r
		}
	}
	return r
}
