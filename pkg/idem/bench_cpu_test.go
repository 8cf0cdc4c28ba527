package idem_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// stubAPI answers every request at once, as a table where each key is
// fresh would: the benchmarks on it measure this package's own CPU and
// allocations per call, without a store's or the SDK's.
type stubAPI struct{}

func (stubAPI) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return &dynamodb.PutItemOutput{}, nil
}

func (stubAPI) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, nil
}

func (stubAPI) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return &dynamodb.UpdateItemOutput{}, nil
}

func (stubAPI) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return &dynamodb.DeleteItemOutput{}, nil
}

func (stubAPI) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// stubCalls are the ways in, each a first execution on a fresh key but
// "cached", a replay from the cache.
var stubCalls = []struct {
	name string
	call func(ctx context.Context, s *idem.Store, sc idem.Scope) error
}{
	{"execute", func(ctx context.Context, s *idem.Store, sc idem.Scope) error {
		_, err := s.Execute(ctx, sc, "fp", stubEffect)
		return err
	}},
	{"transact", func(ctx context.Context, s *idem.Store, sc idem.Scope) error {
		_, err := s.Transact(ctx, sc, "fp", stubEffect)
		return err
	}},
	{"run", func(ctx context.Context, s *idem.Store, sc idem.Scope) error {
		_, err := s.Run(ctx, sc, "fp", stubResponse)
		return err
	}},
	{"do", func(ctx context.Context, s *idem.Store, sc idem.Scope) error {
		_, _, err := idem.Do(ctx, s, sc, "fp", func(context.Context) (int, error) { return 1, nil })
		return err
	}},
}

func stubEffect(context.Context) (idem.Effect, error) {
	return idem.Effect{Response: idem.Response{Body: []byte(`{"id":"1"}`)}}, nil
}

func stubResponse(context.Context) (idem.Response, error) {
	return idem.Response{Body: []byte(`{"id":"1"}`)}, nil
}

// benchStubCalls runs each way in on a stub API (no store, no SDK):
// the package's own CPU and allocations per call, with the store opts
// gives it.
func benchStubCalls(b *testing.B, opts ...idem.Option) {
	for _, c := range stubCalls {
		b.Run(c.name, func(b *testing.B) {
			s, err := idem.NewStore(stubAPI{}, "idempotency", opts...)
			if err != nil {
				b.Fatal(err)
			}
			scopes := make([]idem.Scope, 1024)
			for i := range scopes {
				scopes[i] = scope(b, "cpu-"+strconv.Itoa(i))
			}
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := c.call(ctx, s, scopes[i%len(scopes)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	b.Run("cached", func(b *testing.B) {
		s, err := idem.NewStore(stubAPI{}, "idempotency", append(opts, idem.WithCache(16, 0))...)
		if err != nil {
			b.Fatal(err)
		}
		sc := scope(b, "cpu-cached")
		ctx := context.Background()
		if _, err := s.Execute(ctx, sc, "fp", stubEffect); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if res, err := s.Execute(ctx, sc, "fp", stubEffect); err != nil || res.Outcome != idem.OutcomeReplayed {
				b.Fatal(res.Outcome, err)
			}
		}
	})
}

// BenchmarkCallCPU is the CPU per call that is this package's own: with
// no trace, and with a trace whose hooks are all nil, which must cost
// nothing (pkg/idem/idemotel's BenchmarkCallCPU measures a trace that
// records spans).
func BenchmarkCallCPU(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchStubCalls(b) })
	b.Run("nil-hooks", func(b *testing.B) { benchStubCalls(b, idem.WithTrace(&idemtrace.Trace{})) })
}
