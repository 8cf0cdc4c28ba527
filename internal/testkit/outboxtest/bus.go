// Package outboxtest holds an in-process EventBridge PutEvents for tests
// of the publishers and the relay. (The project's rule against hand-written
// fakes is about DynamoDB, which the tests always reach for real.)
package outboxtest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
)

// Responder answers call number call (from 0) carrying entries.
type Responder func(call int, entries []ebtypes.PutEventsRequestEntry) (*eventbridge.PutEventsOutput, error)

// Bus records every PutEvents call and answers with Respond, or accepts
// every entry when Respond is nil.
type Bus struct {
	// Respond, when set, answers each call.
	Respond Responder

	mu    sync.Mutex
	calls [][]ebtypes.PutEventsRequestEntry
}

// PutEvents implements bridge.PutEventsAPI.
func (b *Bus) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	b.mu.Lock()
	call := len(b.calls)
	b.calls = append(b.calls, slices.Clone(in.Entries))
	respond := b.Respond
	b.mu.Unlock()
	if respond != nil {
		return respond(call, in.Entries)
	}
	return Accepted(len(in.Entries)), nil
}

// Calls returns the entries of every call so far.
func (b *Bus) Calls() [][]ebtypes.PutEventsRequestEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.calls)
}

// Accepted is EventBridge's answer when all n entries went through.
func Accepted(n int) *eventbridge.PutEventsOutput {
	out := &eventbridge.PutEventsOutput{Entries: make([]ebtypes.PutEventsResultEntry, n)}
	for i := range out.Entries {
		out.Entries[i].EventId = aws.String(fmt.Sprintf("eb-%d", i))
	}
	return out
}

// FailEntry refuses entry k of call number call with the error code, and
// accepts everything else.
func FailEntry(call, k int, code string) Responder {
	return func(c int, entries []ebtypes.PutEventsRequestEntry) (*eventbridge.PutEventsOutput, error) {
		out := Accepted(len(entries))
		if c == call {
			out.FailedEntryCount = 1
			out.Entries[k] = ebtypes.PutEventsResultEntry{ErrorCode: aws.String(code), ErrorMessage: aws.String("refused by the test")}
		}
		return out, nil
	}
}
