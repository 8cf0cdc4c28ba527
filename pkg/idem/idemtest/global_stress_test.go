package idemtest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// Concurrency, counted: many writers in every Region at once, in real
// time. MRSC: every key has exactly one winner, the others refused by its
// condition or a replicated write conflict, and every Region agrees. MREC:
// whatever the interleaving, lag and jitter, every replica converges on
// the same items once replication is done, and each Region's stream has a
// record for every change it applied.
func TestGlobalUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
	const writers, keys = 24, 6
	ctx := context.Background()
	regions := []string{east, west, south}

	t.Run("MRSC", func(t *testing.T) {
		t.Parallel()
		g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Mode: idemtest.MRSC, Regions: regions, WriteLatency: time.Millisecond})
		must.NoError(t, err)
		defer g.Close()
		must.NoError(t, createTable(ctx, g.Region(east).HandlerClient(), "t"))
		var mu sync.Mutex
		wins, codes := map[string]int{}, map[string]int{}
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				db := g.Region(regions[w%3]).HandlerClient(fastRetries)
				for k := range keys {
					id := fmt.Sprint("k", k)
					err := claim(db, id, fmt.Sprint("w", w))
					mu.Lock()
					if err == nil {
						wins[id]++
					} else {
						codes[errorCode(err)]++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		for k := range keys {
			check.Equal(t, 1, wins[fmt.Sprint("k", k)], "k%d", k)
		}
		check.Equal(t, writers*keys-keys, codes["ConditionalCheckFailedException"]+codes["ReplicatedWriteConflictException"], "%v", codes)
		check.Equal(t, codes["ReplicatedWriteConflictException"], g.Stats().WriteConflicts)
		for k := range keys {
			id := fmt.Sprint("k", k)
			want := item(t, g.Region(east).HandlerClient(), id, true)
			for _, r := range regions {
				check.Equal(t, want, item(t, g.Region(r).HandlerClient(), id, true), "%s in %s", id, r)
			}
		}
	})

	t.Run("MREC", func(t *testing.T) {
		t.Parallel()
		g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Regions: regions, Lag: time.Millisecond, Jitter: 2 * time.Millisecond})
		must.NoError(t, err)
		defer g.Close()
		must.NoError(t, createTable(ctx, g.Region(east).HandlerClient(), "t"))
		streams := map[string]*idemtest.Stream{}
		for _, r := range regions {
			streams[r] = g.Region(r).Stream("t")
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		changes := map[string]int{} // per Region: its writes that changed an item
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				db := g.Region(regions[w%3]).HandlerClient(fastRetries)
				for i := range 10 {
					id := fmt.Sprint("k", (w+i)%keys)
					var err error
					changed := true
					if i%4 == 3 {
						var out *dynamodb.DeleteItemOutput
						out, err = db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: key(id), ReturnValues: types.ReturnValueAllOld})
						changed = err == nil && out.Attributes != nil
					} else {
						_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key(id),
							UpdateExpression:          aws.String("SET v = :v ADD n :one"),
							ExpressionAttributeValues: map[string]types.AttributeValue{":v": s(fmt.Sprint(w, "-", i)), ":one": n("1")}})
					}
					check.NoError(t, err)
					if changed {
						mu.Lock()
						changes[regions[w%3]]++
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		must.Equal(t, 0, g.Settle())
		scan := func(r string) map[string]string {
			out, err := g.Region(r).HandlerClient().Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("t"), ConsistentRead: aws.Bool(true)})
			must.NoError(t, err)
			m := map[string]string{}
			for _, it := range out.Items {
				m[it["id"].(*types.AttributeValueMemberS).Value] = fmt.Sprint(it["v"], it["n"])
			}
			return m
		}
		want := scan(east)
		for _, r := range regions {
			check.Equal(t, want, scan(r), "%s converged with us-east-1", r)
		}
		st := g.Stats()
		replicated := 0
		for _, r := range regions {
			local := 0
			for _, rec := range streams[r].Read() {
				if rec.Replicated() {
					replicated++
				} else {
					local++
				}
			}
			check.Equal(t, changes[r], local, "%s: a record for each of its own changes", r)
		}
		check.Positive(t, replicated)
		check.LessOrEqual(t, replicated, st.Replicated, "a record per replicated change applied (but deletes of absent items)")
	})
}
