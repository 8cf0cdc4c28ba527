package idemshard_test

import (
	"sync"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/idem/idemshard"
)

// A process's batches, one after another, stay on one shard; batches at
// the same time take shards of their own while there are free ones.
func TestBatchesOfAProcessStayOnOneShardAndConcurrentOnesSpread(t *testing.T) {
	s := idemshard.New(4)
	b := s.Batch()
	home := b.Shard(false)
	b.Done()
	for range 10 {
		b := s.Batch()
		if got := b.Shard(false); got != home {
			t.Fatalf("a later batch got shard %d, want the process's %d", got, home)
		}
		b.Done()
	}
	seen := map[int]bool{}
	var batches []*idemshard.Batch
	for range 4 {
		b := s.Batch()
		seen[b.Shard(false)] = true
		batches = append(batches, b)
	}
	if len(seen) != 4 {
		t.Errorf("4 concurrent batches on 4 shards took %d distinct ones", len(seen))
	}
	fifth := s.Batch()
	if sh := fifth.Shard(false); sh < 0 || sh >= 4 {
		t.Errorf("a fifth batch got shard %d", sh)
	}
	for _, b := range append(batches, fifth) {
		b.Done()
		b.Done() // twice is harmless
	}
}

// A transaction that met its shard held elsewhere moves the batch to
// another shard; one that did not (a conflict on a key's own record)
// does not.
func TestABatchMovesOnlyWhenItsShardWasHeld(t *testing.T) {
	s := idemshard.New(3)
	b := s.Batch()
	defer b.Done()
	first := b.Shard(false)
	if got := b.Shard(false); got != first {
		t.Errorf("moved from %d to %d without its shard held", first, got)
	}
	second := b.Shard(true)
	if second == first {
		t.Errorf("stayed on %d after a conflict on a shared write", first)
	}
	if got := b.Shard(false); got != second {
		t.Errorf("moved again (%d to %d) without another conflict", second, got)
	}
}

func TestOneShardAndConcurrentUse(t *testing.T) {
	one := idemshard.New(1)
	b := one.Batch()
	if got := b.Shard(true); got != 0 {
		t.Errorf("one shard: got %d", got)
	}
	b.Done()

	s := idemshard.New(8)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 100 {
				b := s.Batch()
				if sh := b.Shard(true); sh < 0 || sh >= s.N() {
					t.Errorf("shard %d of %d", sh, s.N())
				}
				b.Done()
			}
		})
	}
	wg.Wait()
	defer func() {
		if recover() == nil {
			t.Error("New(0) should panic")
		}
	}()
	idemshard.New(0)
}
