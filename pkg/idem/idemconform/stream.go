package idemconform

import (
	"sync"
	"time"
)

// streamRetryDelay is how long a shard waits before it retries a batch
// from the record its last answer named (or, after a crash, from its
// checkpoint): the event source mapping's retry.
const streamRetryDelay = 30 * time.Second

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
	for i, s := range shards {
		pl := w.poolAt(i)
		wg.Go(func() {
			time.Sleep(w.jitter(100 * time.Millisecond))
			for s.next < len(s.records) {
				batch := s.records[s.next:min(s.next+batchSize, len(s.records))]
				e := pl.acquire()
				outs := w.invoke(e, batch, false)
				pl.release(e)
				from := len(batch) // a crash leaves every outcome unknown: retry from the checkpoint
				for i, out := range outs {
					if out.class == unknown {
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
