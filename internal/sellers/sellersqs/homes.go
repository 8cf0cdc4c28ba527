package sellersqs

import (
	"math/rand/v2"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// homes is the shards of its sellers a consumer's batches write to
// (sellers.Shards of each). A batch takes a home
// and updates that shard of each of its sellers in every transaction it
// sends; a transaction cancelled because another one held that shard
// moves the batch to another home at random. A Lambda execution
// environment runs one batch at a time, so it keeps writing to one shard,
// and environments spread out over the shards as their conflicts push
// them apart: two meet again only when one moves onto the other's shard.
// Concurrent batches of one consumer (tests, make run) take different
// homes, as separate environments would. pkg/idem/idemshard is the
// library's form of the same policy.
type homes struct {
	n    int
	mu   sync.Mutex
	free []int // homes not in use, the latest given back last
	busy map[int]bool
}

func newHomes(n int) *homes {
	return &homes{n: n, free: []int{rand.IntN(n)}, busy: map[int]bool{}}
}

// take returns a batch's home: the one the last batch gave back, or a
// shard no batch of this consumer writes.
func (h *homes) take() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := -1
	for len(h.free) > 0 && s < 0 {
		s, h.free = h.free[len(h.free)-1], h.free[:len(h.free)-1]
		if h.busy[s] {
			s = -1
		}
	}
	if s < 0 {
		s = h.other(-1)
	}
	h.busy[s] = true
	return s
}

// move gives up a batch's home, where a conflict met another
// transaction, for another at random.
func (h *homes) move(from int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.busy, from)
	s := h.other(from)
	h.busy[s] = true
	return s
}

// give hands a batch's home on to the next batch.
func (h *homes) give(s int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.busy, s)
	h.free = append(h.free, s)
}

// other returns a shard at random other than from, and other than those
// this consumer's batches hold while there is one; h.mu is held.
func (h *homes) other(from int) int {
	var pick []int
	for _, free := range []bool{true, false} {
		for s := range h.n {
			if s != from && (!free || !h.busy[s]) {
				pick = append(pick, s)
			}
		}
		if len(pick) > 0 {
			return pick[rand.IntN(len(pick))]
		}
	}
	return 0 // one shard
}

// heldShard reports whether a batch's last transaction was cancelled
// because another transaction held its home shard: a TransactionConflict
// on the update of the sellers table among the shared writes pkg/idem
// reports contended. A conflict on an event's record (a duplicate of it
// committing in another environment) says nothing about the shard.
func heldShard(contended []types.TransactWriteItem, table string) bool {
	for _, w := range contended {
		if w.Update != nil && aws.ToString(w.Update.TableName) == table {
			return true
		}
	}
	return false
}
