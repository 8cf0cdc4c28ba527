package idem_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// cost is what one request cost: its calls per operation, and the
// capacity units the store counted.
type cost struct {
	calls       map[idemtest.Op]int
	read, write float64
}

func (c cost) String() string {
	n := 0
	var ops []string
	for _, op := range slices.Sorted(maps.Keys(c.calls)) {
		n += c.calls[op]
		ops = append(ops, fmt.Sprintf("%s %d", op, c.calls[op]))
	}
	return fmt.Sprintf("%d calls (%s), %.1f WRU, %.1f RRU", n, strings.Join(ops, ", "), c.write, c.read)
}

// measure runs call against srv and returns what it cost.
func measure(t *testing.T, srv *idemtest.Server, call func() error) cost {
	t.Helper()
	srv.ResetCalls()
	srv.ResetConsumed()
	must.NoError(t, call())
	u := srv.Consumed().Total()
	return cost{calls: srv.CallCounts(), read: u.Read, write: u.Write}
}

// What a request costs on an MRSC table against a regional one, per way
// in, from the store's counts (calls) and ConsumedCapacity (units), with
// createproduct's writes: the seller's grant checked, the product and
// its outbox event put, a counter updated (the counter exists, as it
// does but for the first request). The store learned its table's kind
// at init. The calls are asserted; the units are logged (go test -v -run
// TestMRSCCallsAndUnitsPerRequest), for docs/library.md.
func TestMRSCCallsAndUnitsPerRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		env := newMRSC(t, idemtest.GlobalConfig{})
		regional := idemtest.NewServer()
		t.Cleanup(regional.Close)
		rdb := regional.HandlerClient(fastRetries)
		createMRSCTables(t, rdb)
		kinds := []struct {
			name string
			srv  *idemtest.Server
			db   *dynamodb.Client
		}{{"regional", regional, rdb}, {"MRSC", env.g.Region(regionEast), env.db[regionEast]}}
		for _, k := range kinds {
			for _, tb := range []string{mrscGrants, mrscCounters} {
				_, err := k.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tb),
					Item: map[string]types.AttributeValue{"id": sAttr(map[string]string{mrscGrants: "seller-1", mrscCounters: "products"}[tb]), "n": nAttr(0)}})
				must.NoError(t, err)
			}
		}
		var runs struct{ atomic.Int64 }
		ways := []struct {
			name string
			call func(s *idem.Store, key string) error
		}{
			{"Execute", func(s *idem.Store, key string) error {
				_, err := s.Execute(ctx, scope(t, key), "fp", mrscEffect(&runs.Int64))
				return err
			}},
			{"Transact", func(s *idem.Store, key string) error {
				_, err := s.Transact(ctx, scope(t, key), "fp", mrscEffect(&runs.Int64))
				return err
			}},
			{"ExecuteBatch, 10 events", func(s *idem.Store, key string) error {
				items := make([]idem.BatchItem, 10)
				for i := range items {
					items[i] = idem.BatchItem{Scope: scope(t, key+"-"+strconv.Itoa(i)), Fingerprint: "fp", Response: created(key)}
				}
				res, err := s.ExecuteBatch(ctx, items, func(executing []int, _ []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
					// Per event its product and outbox event; per batch
					// one grant check and one counter update.
					_, w := mrscWrites()
					grant, counter := w[0], w[3]
					counter.Update.ExpressionAttributeValues[":one"] = nAttr(int64(len(executing)))
					writes := []types.TransactWriteItem{grant}
					for range executing {
						_, w := mrscWrites()
						writes = append(writes, w[1:3]...)
					}
					return append(writes, counter), nil
				})
				for _, r := range res {
					err = errors.Join(err, r.Err)
				}
				return err
			}},
			{"Run", func(s *idem.Store, key string) error {
				_, err := s.Run(ctx, scope(t, key), "fp", func(context.Context) (idem.Response, error) { return created(key), nil })
				return err
			}},
		}
		want := map[string]map[string][2]map[idemtest.Op]int{
			"regional": {
				"Execute":  {{idemtest.OpPutItem: 1, idemtest.OpTransactWriteItems: 1}, {idemtest.OpPutItem: 1}},
				"Transact": {{idemtest.OpTransactWriteItems: 1}, {idemtest.OpTransactWriteItems: 1}},
				"Run":      {{idemtest.OpPutItem: 1, idemtest.OpUpdateItem: 1}, {idemtest.OpPutItem: 1}},
			},
			"MRSC": {
				// The claim, 2 guards (grant, counter), the counter's
				// stamp, the decision, 3 writes (product, event,
				// counter), the finish.
				"Execute":  {{idemtest.OpPutItem: 3, idemtest.OpUpdateItem: 6}, {idemtest.OpPutItem: 1}},
				"Transact": {{idemtest.OpPutItem: 3, idemtest.OpUpdateItem: 6}, {idemtest.OpPutItem: 1}},
				"Run":      {{idemtest.OpPutItem: 1, idemtest.OpUpdateItem: 1}, {idemtest.OpPutItem: 1}},
			},
		}
		for _, w := range ways {
			for _, k := range kinds {
				s, err := idem.NewStore(k.db, mrscIdem)
				must.NoError(t, err)
				k.srv.ResetCalls()
				_, err = s.Learn(ctx)
				must.NoError(t, err)
				check.Equal(t, 1, k.srv.Calls(opDescribeTable), "init: one DescribeTable")
				key := strings.ReplaceAll(w.name, " ", "") + "-" + k.name
				first := measure(t, k.srv, func() error { return w.call(s, key) })
				replay := measure(t, k.srv, func() error { return w.call(s, key) })
				t.Logf("%-24s %-8s first: %v | replay: %v", w.name, k.name, first, replay)
				if calls, ok := want[k.name][w.name]; ok {
					check.Equal(t, calls[0], first.calls, "%s %s first", w.name, k.name)
					check.Equal(t, calls[1], replay.calls, "%s %s replay", w.name, k.name)
				}
			}
		}
	})
}
