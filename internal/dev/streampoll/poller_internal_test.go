package streampoll

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests cover the poller's logic without a Streams endpoint; the
// end-to-end behaviour against one is in poller_endpoint_test.go.

func seq(i int) string { return fmt.Sprintf("%021d", 100+i) }

func records(n int) []events.DynamoDBEventRecord {
	out := make([]events.DynamoDBEventRecord, n)
	for i := range out {
		out[i] = events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{SequenceNumber: seq(i)}}
	}
	return out
}

func failures(ids ...string) events.DynamoDBEventResponse {
	var r events.DynamoDBEventResponse
	for _, id := range ids {
		r.BatchItemFailures = append(r.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: id})
	}
	return r
}

func TestFailedFromFollowsTheEventSourceMapping(t *testing.T) {
	t.Parallel()
	batch := records(5)
	for name, tc := range map[string]struct {
		resp events.DynamoDBEventResponse
		err  error
		want int
	}{
		"success":                   {want: 5},
		"empty failures":            {resp: events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}, want: 5},
		"one failure":               {resp: failures(seq(3)), want: 3},
		"earliest of several":       {resp: failures(seq(4), seq(1), seq(3)), want: 1},
		"first record":              {resp: failures(seq(0)), want: 0},
		"handler error":             {err: errors.New("boom"), want: 0},
		"error beats failures":      {resp: failures(seq(4)), err: errors.New("boom"), want: 0},
		"empty identifier":          {resp: failures(seq(3), ""), want: 0},
		"identifier not in batch":   {resp: failures(seq(3), seq(99)), want: 0},
		"event id, not sequence no": {resp: failures("eventid-3"), want: 0},
	} {
		assert.Equal(t, tc.want, failedFrom(batch, tc.resp, tc.err), name)
	}
}

func TestResumeAt(t *testing.T) {
	t.Parallel()
	start := position{typ: streamtypes.ShardIteratorTypeTrimHorizon}
	batch := records(3)
	assert.Equal(t, position{typ: streamtypes.ShardIteratorTypeAfterSequenceNumber, seq: seq(2)}, resumeAt(start, batch, 3),
		"all done: after the last record")
	assert.Equal(t, position{typ: streamtypes.ShardIteratorTypeAtSequenceNumber, seq: seq(1)}, resumeAt(start, batch, 1),
		"failed: at the failed record")
	assert.Equal(t, position{typ: streamtypes.ShardIteratorTypeAtSequenceNumber, seq: seq(0)}, resumeAt(start, batch, 0))
	assert.Equal(t, start, resumeAt(start, nil, 0), "empty batch: unchanged")
	batch[1].Change.SequenceNumber = ""
	assert.Equal(t, start, resumeAt(start, batch, 1), "no sequence number: retry from where the batch began")
}

// recorder is a Handler that records the batches it sees and fails as told.
type recorder struct {
	batches [][]string
	fail    func(call int, batch []events.DynamoDBEventRecord) (events.DynamoDBEventResponse, error)
}

func (r *recorder) handle(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	call := len(r.batches)
	var seqs []string
	for _, rec := range ev.Records {
		seqs = append(seqs, rec.Change.SequenceNumber)
	}
	r.batches = append(r.batches, seqs)
	if r.fail != nil {
		return r.fail(call, ev.Records)
	}
	return events.DynamoDBEventResponse{}, nil
}

func sizes(batches [][]string) []int {
	var out []int
	for _, b := range batches {
		out = append(out, len(b))
	}
	return out
}

func TestDeliverBatchesInOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n, size int
		want    []int
	}{
		{0, 100, nil},
		{1, 100, []int{1}},
		{100, 100, []int{100}},
		{250, 100, []int{100, 100, 50}},
		{7, 3, []int{3, 3, 1}},
	} {
		r := &recorder{}
		recs := records(tc.n)
		start := position{typ: streamtypes.ShardIteratorTypeTrimHorizon}
		next, err := deliver(t.Context(), r.handle, recs, tc.size, start)
		require.NoError(t, err)
		assert.Equal(t, tc.want, sizes(r.batches), "n=%d size=%d", tc.n, tc.size)
		var flat []string
		for _, b := range r.batches {
			flat = append(flat, b...)
		}
		for i, s := range flat {
			assert.Equal(t, seq(i), s, "order")
		}
		if tc.n == 0 {
			assert.Equal(t, start, next)
		} else {
			assert.Equal(t, position{typ: streamtypes.ShardIteratorTypeAfterSequenceNumber, seq: seq(tc.n - 1)}, next)
		}
	}
}

func TestDeliverStopsAtTheFailedRecord(t *testing.T) {
	t.Parallel()
	r := &recorder{fail: func(call int, batch []events.DynamoDBEventRecord) (events.DynamoDBEventResponse, error) {
		if call == 1 {
			return failures(batch[30].Change.SequenceNumber, batch[60].Change.SequenceNumber), nil
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	next, err := deliver(t.Context(), r.handle, records(250), 100, position{typ: streamtypes.ShardIteratorTypeTrimHorizon})
	require.ErrorIs(t, err, ErrBatchFailed)
	assert.Equal(t, []int{100, 100}, sizes(r.batches), "the third batch is not delivered")
	assert.Equal(t, position{typ: streamtypes.ShardIteratorTypeAtSequenceNumber, seq: seq(130)}, next)
}

func TestDeliverRetriesAWholeBatchOnError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	r := &recorder{fail: func(call int, _ []events.DynamoDBEventRecord) (events.DynamoDBEventResponse, error) {
		if call == 1 {
			return events.DynamoDBEventResponse{}, boom
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	next, err := deliver(t.Context(), r.handle, records(250), 100, position{typ: streamtypes.ShardIteratorTypeTrimHorizon})
	require.ErrorIs(t, err, boom)
	assert.Equal(t, position{typ: streamtypes.ShardIteratorTypeAtSequenceNumber, seq: seq(100)}, next)
}

func TestReadyReadsParentsBeforeChildren(t *testing.T) {
	t.Parallel()
	now := time.Now()
	shards := map[string]*shard{
		"a":  {id: "a"},
		"a1": {id: "a1", parent: "a"},
		"a2": {id: "a2", parent: "a"},
		"b":  {id: "b", parent: "gone"}, // parent trimmed from the stream
		"c":  {id: "c", notBefore: now.Add(time.Minute)},
		"d":  {id: "d", ended: true},
	}
	ids := func(ss []*shard) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.id)
		}
		return out
	}
	assert.Equal(t, []string{"a", "b"}, ids(ready(shards, now)))
	shards["a"].ended = true
	assert.Equal(t, []string{"a1", "a2", "b"}, ids(ready(shards, now)))
	assert.Equal(t, []string{"a1", "a2", "b", "c"}, ids(ready(shards, now.Add(2*time.Minute))))
}

func TestMergeStartsShardsWhereTheMappingWould(t *testing.T) {
	t.Parallel()
	closed := &streamtypes.SequenceNumberRange{StartingSequenceNumber: aws.String("1"), EndingSequenceNumber: aws.String("9")}
	open := &streamtypes.SequenceNumberRange{StartingSequenceNumber: aws.String("10")}
	listed := []streamtypes.Shard{
		{ShardId: aws.String("old"), SequenceNumberRange: closed},
		{ShardId: aws.String("cur"), ParentShardId: aws.String("old"), SequenceNumberRange: open},
	}
	for _, tc := range []struct {
		start    streamtypes.ShardIteratorType
		wantType streamtypes.ShardIteratorType
		oldEnded bool
	}{
		{streamtypes.ShardIteratorTypeTrimHorizon, streamtypes.ShardIteratorTypeTrimHorizon, false},
		{streamtypes.ShardIteratorTypeLatest, streamtypes.ShardIteratorTypeLatest, true},
	} {
		p, err := NewPoller(noClient(), testARNInternal, func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{}, nil
		}, Options{StartingPosition: tc.start})
		require.NoError(t, err)
		shards := map[string]*shard{}
		p.merge(shards, listed, true)
		require.Len(t, shards, 2)
		assert.Equal(t, tc.wantType, shards["cur"].from.typ, tc.start)
		assert.Equal(t, "old", shards["cur"].parent)
		assert.Equal(t, tc.oldEnded, shards["old"].ended, tc.start)

		// A shard found later always starts at TRIM_HORIZON.
		p.merge(shards, append(listed, streamtypes.Shard{ShardId: aws.String("new"), ParentShardId: aws.String("cur")}), false)
		assert.Equal(t, streamtypes.ShardIteratorTypeTrimHorizon, shards["new"].from.typ)

		// An ended shard that left the stream is forgotten, so its children
		// are not held back by it.
		shards["old"].ended = true
		p.merge(shards, listed[1:], false)
		assert.NotContains(t, shards, "old")
	}
}

func TestBackoffDoublesUpToTheLimit(t *testing.T) {
	t.Parallel()
	base, limit := 100*time.Millisecond, time.Second
	var got []time.Duration
	for f := 1; f <= 6; f++ {
		got = append(got, backoff(base, limit, f))
	}
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, time.Second, time.Second}, got)
}

const testARNInternal = "arn:aws:dynamodb:us-east-1:123456789012:table/outbox/stream/x"

// noClient returns a real Streams client that these tests never call.
func noClient() *dynamodbstreams.Client {
	return dynamodbstreams.New(dynamodbstreams.Options{Region: "us-east-1"})
}

func TestNewPollerValidates(t *testing.T) {
	t.Parallel()
	h := func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{}, nil
	}
	for name, f := range map[string]func() error{
		"nil client":  func() error { _, err := NewPoller(nil, testARNInternal, h, Options{}); return err },
		"no arn":      func() error { _, err := NewPoller(noClient(), "", h, Options{}); return err },
		"nil handler": func() error { _, err := NewPoller(noClient(), testARNInternal, nil, Options{}); return err },
		"batch too big": func() error {
			_, err := NewPoller(noClient(), testARNInternal, h, Options{BatchSize: 1001})
			return err
		},
		"bad position": func() error {
			_, err := NewPoller(noClient(), testARNInternal, h, Options{StartingPosition: streamtypes.ShardIteratorTypeAtSequenceNumber})
			return err
		},
	} {
		assert.ErrorIs(t, f(), ErrConfig, name)
	}
	p, err := NewPoller(noClient(), testARNInternal, h, Options{})
	require.NoError(t, err)
	assert.Equal(t, DefaultBatchSize, p.opts.BatchSize)
	assert.Equal(t, streamtypes.ShardIteratorTypeTrimHorizon, p.opts.StartingPosition)
}
