// Package idemshard spreads an aggregate that many concurrent batches
// update (the one account every message credits, a seller's counters)
// over several items: DynamoDB's write sharding for a hot key, fitted to
// idem.Store.ExecuteBatch and idemsqs.Consumer.Transact.
//
// A DynamoDB transaction holds every item it writes for as long as it
// runs (milliseconds), and cancels another transaction that touches one
// of them meanwhile (TransactionConflict). When every batch of a queue
// updates one aggregate item, the consumers' transactions take turns on
// it: most of them conflict, are retried with backoff, and under enough
// concurrency some run out of attempts (ExecuteBatch then splits them,
// down to single messages, before it fails any). Spread over n items,
// with each batch writing one of them, batches meet only when two pick
// the same item.
//
// Shards hands the items out, as indexes 0 to n-1, to the batches of one
// process (a Lambda execution environment runs one batch at a time): a
// batch keeps the shard the previous batch of its process used, so a
// process stays on one item, and moves to another at random when a
// transaction of the batch met a shared write held by another
// transaction. Processes thus drift apart over the shards and then stay
// apart. The aggregate is the sum of its shards: store them as items of
// their own (the aggregate's id as partition key, the shard as sort key,
// say) and read them with one Query, adding up. A shard holds a part of
// the total, so a bound on the total (a balance that must not pass a
// limit) is a bound on each shard's share of it, or a read of every shard
// in the condition's place.
//
// How many: at least the number of processes that update the aggregate
// at once (the event source mapping's maximum concurrency), so each can
// have one of its own; more cost a larger read and buy little. This
// repository's seller statistics measured 6 consumers on one seller:
// transactions meeting a held shard fell from 0.17-0.19 per event on one
// item to 0.04-0.05 with 4 shards and 0 to 0.01 from 8 on
// (docs/architecture.md, Hot sellers).
package idemshard

import (
	"math/rand/v2"
	"sync"
)

// Shards hands out the shards of one aggregate to the batches of one
// process. Make one per process and aggregate kind, and share it: it is
// safe for concurrent use.
type Shards struct {
	n    int
	mu   sync.Mutex
	free []int // shards no batch holds, the latest given back last
	busy map[int]bool
}

// New returns the shards 0 to n-1 of an aggregate; n must be at least 1.
func New(n int) *Shards {
	if n < 1 {
		panic("idemshard: New needs at least 1 shard")
	}
	return &Shards{n: n, free: []int{rand.IntN(n)}, busy: map[int]bool{}}
}

// N is the number of shards.
func (s *Shards) N() int { return s.n }

// Batch starts one batch: one ExecuteBatch or idemsqs.Consumer.Transact call,
// whose shared writes function asks the Batch's Shard for the shard of
// each transaction. Call Done once the call has returned.
func (s *Shards) Batch() *Batch {
	return &Batch{shards: s, shard: s.take()}
}

// Batch is one batch's hold on a shard.
type Batch struct {
	shards *Shards
	mu     sync.Mutex
	shard  int
	done   bool
}

// Shard is the shard the transaction being built updates: the batch's,
// or, when held says the batch's last transaction met its shard held by
// another transaction, another one at random (one no other batch of this
// process holds, when there is one). ExecuteBatch asks for the shared
// writes once per transaction it sends, retries included, with the
// shared writes whose items were held (its contended argument), so a
// shared writes function that passes whether its shard's write was among
// them moves off a held item:
//
//	shard := batch.Shard(len(contended) > 0)
func (b *Batch) Shard(held bool) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if held && !b.done {
		b.shard = b.shards.moveFrom(b.shard)
	}
	return b.shard
}

// Done hands the batch's shard on to the next batch of this process.
func (b *Batch) Done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	b.shards.give(b.shard)
}

// take returns a batch's shard: the one the last batch gave back, or one
// no batch of this process holds.
func (s *Shards) take() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	shard := -1
	for len(s.free) > 0 && shard < 0 {
		shard, s.free = s.free[len(s.free)-1], s.free[:len(s.free)-1]
		if s.busy[shard] {
			shard = -1
		}
	}
	if shard < 0 {
		shard = s.other(-1)
	}
	s.busy[shard] = true
	return shard
}

// moveFrom gives up a batch's shard, where it met another transaction,
// for another at random.
func (s *Shards) moveFrom(from int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.busy, from)
	shard := s.other(from)
	s.busy[shard] = true
	return shard
}

func (s *Shards) give(shard int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.busy, shard)
	s.free = append(s.free, shard)
}

// other returns a shard at random other than from, and other than those
// the process's batches hold while there is one; s.mu is held.
func (s *Shards) other(from int) int {
	var pick []int
	for _, free := range []bool{true, false} {
		for shard := range s.n {
			if shard != from && (!free || !s.busy[shard]) {
				pick = append(pick, shard)
			}
		}
		if len(pick) > 0 {
			return pick[rand.IntN(len(pick))]
		}
	}
	return 0 // one shard
}
