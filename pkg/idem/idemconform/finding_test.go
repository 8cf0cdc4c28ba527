package idemconform

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemsqs"
)

// What the suite found beyond issue 26's holes, each reduced to the
// smallest deterministic history.

// A batch that carries one key twice, another payload first and then the
// payload the key was completed with, answers the second as a replay:
// its payload is the key's. (Found by the ExecuteBatch and
// idemsqs.Consumer.Transact cells: a message redelivered behind a key-reuse
// message of its key is answered key reuse on every receive and
// dead-lettered, though idemsqs promises a message fails only for its
// own sake.)
func TestBatchAnswersADuplicateBehindAnotherPayload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t)
		s := b.store()
		sc := timeScope(t)
		a, other := &actor{caller: "alice", key: "k0", variant: "a"}, &actor{caller: "alice", key: "k0", variant: "b"}
		a.req, other.req = &Request{a}, &Request{other}
		none := func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { return nil, nil }
		fingerprint := func(x *actor) string {
			fp, err := idem.Fingerprint(x.order())
			if err != nil {
				t.Fatal(err)
			}
			return fp
		}
		item := func(x *actor, exec int) idem.BatchItem {
			return idem.BatchItem{Scope: sc, Fingerprint: fingerprint(x), Response: Reply{Caller: "alice", Key: "k0", Variant: x.variant, Exec: exec}.Response()}
		}
		ctx := context.Background()
		if res, err := s.ExecuteBatch(ctx, []idem.BatchItem{item(a, 1)}, none); err != nil || res[0].Err != nil {
			t.Fatalf("the first delivery: %v %v", err, res[0].Err)
		}

		res, err := s.ExecuteBatch(ctx, []idem.BatchItem{item(other, 2), item(a, 3)}, none)
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(res[0].Err, idem.ErrKeyReuse) {
			t.Errorf("ExecuteBatch: the other payload: %s %v, want key reuse", res[0].Outcome, res[0].Err)
		}
		if res[1].Err != nil || res[1].Outcome != idem.OutcomeReplayed {
			t.Errorf("ExecuteBatch: the completed payload, behind the other one: %s %v; want a replay of the completion (its payload is the key's)", res[1].Outcome, res[1].Err)
		}

		var ev events.SQSEvent
		for _, x := range []*actor{other, a} {
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: x.msgID(), Body: string(x.req.Body())})
		}
		consumer, err := idemsqs.New(s, operation, func(m events.SQSMessage) (idemsqs.Entry[Payload], error) {
			msg, err := ParseMessage([]byte(m.Body))
			return idemsqs.Entry[Payload]{Principal: msg.Principal, Key: msg.Key, Value: msg.Payload()}, err
		})
		if err != nil {
			t.Fatal(err)
		}
		resp, results := consumer.Transact(ctx, ev, func([]Payload, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { return nil, nil })

		for _, f := range resp.BatchItemFailures {
			if f.ItemIdentifier == a.msgID() {
				t.Errorf("idemsqs.Consumer.Transact: the message with the key's own payload is a batch item failure (%s %v), so the queue redelivers it behind the other one until it is dead-lettered", results[1].Outcome, results[1].Err)
			}
		}
	})
}
