package idemshard_test

import (
	"context"
	"sync"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/idem/idemshard"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/callopt"
)

// A process's batches, one after another, stay on one shard; batches at
// the same time take shards of their own while there are free ones.
func TestBatchesOfAProcessStayOnOneShardAndConcurrentOnesSpread(t *testing.T) {
	s := idemshard.New(4)
	_, b := s.Batch(context.Background())
	home := b.Shard()
	b.Done()
	for range 10 {
		_, b := s.Batch(context.Background())
		if got := b.Shard(); got != home {
			t.Fatalf("a later batch got shard %d, want the process's %d", got, home)
		}
		b.Done()
	}
	seen := map[int]bool{}
	var batches []*idemshard.Batch
	for range 4 {
		_, b := s.Batch(context.Background())
		seen[b.Shard()] = true
		batches = append(batches, b)
	}
	if len(seen) != 4 {
		t.Errorf("4 concurrent batches on 4 shards took %d distinct ones", len(seen))
	}
	_, fifth := s.Batch(context.Background())
	if sh := fifth.Shard(); sh < 0 || sh >= 4 {
		t.Errorf("a fifth batch got shard %d", sh)
	}
	for _, b := range append(batches, fifth) {
		b.Done()
		b.Done() // twice is harmless
	}
}

// A transaction that met a shared write held elsewhere moves the batch to
// another shard; one that conflicted on a key's own record does not.
func TestABatchMovesOnlyAfterAConflictOnASharedWrite(t *testing.T) {
	s := idemshard.New(3)
	ctx, b := s.Batch(context.Background())
	defer b.Done()
	report := callopt.SharedConflicts(ctx)
	if report == nil {
		t.Fatal("the batch's context carries no report for the store")
	}
	first := b.Shard()
	report(false)
	if got := b.Shard(); got != first {
		t.Errorf("moved from %d to %d after a conflict on a record", first, got)
	}
	report(true)
	second := b.Shard()
	if second == first {
		t.Errorf("stayed on %d after a conflict on a shared write", first)
	}
	if got := b.Shard(); got != second {
		t.Errorf("moved again (%d to %d) without another conflict", second, got)
	}
}

func TestOneShardAndConcurrentUse(t *testing.T) {
	one := idemshard.New(1)
	ctx, b := one.Batch(context.Background())
	callopt.SharedConflicts(ctx)(true)
	if got := b.Shard(); got != 0 {
		t.Errorf("one shard: got %d", got)
	}
	b.Done()

	s := idemshard.New(8)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 100 {
				ctx, b := s.Batch(context.Background())
				callopt.SharedConflicts(ctx)(true)
				if sh := b.Shard(); sh < 0 || sh >= s.N() {
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
