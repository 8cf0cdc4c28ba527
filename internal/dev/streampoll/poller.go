// Package streampoll reads a DynamoDB stream through the Streams API and
// hands batches to a Lambda-style handler the way an event source mapping
// does (batches in order per shard, ReportBatchItemFailures honoured,
// parents before children), for make run and make e2e, which have no
// Lambda.
package streampoll

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// Client is the part of the DynamoDB Streams API the Poller calls;
// *dynamodbstreams.Client implements it.
type Client interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// Handler processes one batch of stream records, with the signature of a
// Lambda function behind a DynamoDB event source mapping that has
// ReportBatchItemFailures on.
type Handler func(ctx context.Context, event events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// Batch sizes, as the event source mapping and GetRecords bound them.
const (
	// DefaultBatchSize is the event source mapping's default.
	DefaultBatchSize = 100
	// MaxBatchSize is the most records one GetRecords call returns.
	MaxBatchSize = 1000
)

// ErrConfig reports a Poller built with missing or out-of-range settings.
var ErrConfig = errors.New("streams: invalid poller configuration")

// Options tune a Poller; the zero value gives the defaults noted per field.
type Options struct {
	// BatchSize is the most records handed to the handler at once
	// (default DefaultBatchSize, at most MaxBatchSize).
	BatchSize int
	// StartingPosition is where shards that exist when Run starts are read
	// from: TRIM_HORIZON (default, every record the stream still holds) or
	// LATEST. Shards found later are always read from TRIM_HORIZON.
	StartingPosition streamtypes.ShardIteratorType
	// PollInterval is the pause after a round in which no shard had new
	// records (default 250ms: the event source mapping polls each shard
	// four times a second).
	PollInterval time.Duration
	// DescribeInterval is how often the stream is described again to find
	// new shards (default 10s); a shard that closes triggers it at once.
	DescribeInterval time.Duration
	// RetryDelay is the first pause before a failed batch or call is
	// retried (default 100ms); it doubles per consecutive failure of the
	// shard, up to MaxRetryDelay (default 5s). Like the event source
	// mapping's default, a failing batch is retried until it succeeds or
	// its records leave the stream: the shard makes no progress past it.
	RetryDelay, MaxRetryDelay time.Duration
	// Logger receives the poller's own log lines (default slog.Default()).
	Logger *slog.Logger
}

// Poller reads a DynamoDB stream through the Streams API and calls a
// handler the way Lambda's event source mapping does: records in shard
// order, in batches of at most BatchSize; a parent shard is read to its end
// before its children; a failed batch is read again from the record its
// response names (the earliest of batchItemFailures), or whole when the
// handler returns an error or names a record that is not in the batch.
// Shards are read one after another in a single goroutine, so the handler
// is never called concurrently.
type Poller struct {
	client  Client
	arn     string
	handler Handler
	opts    Options
	log     *slog.Logger
}

// NewPoller returns a Poller for the stream streamARN.
func NewPoller(client Client, streamARN string, handler Handler, opts Options) (*Poller, error) {
	switch {
	case client == nil:
		return nil, fmt.Errorf("%w: nil client", ErrConfig)
	case streamARN == "":
		return nil, fmt.Errorf("%w: empty stream ARN", ErrConfig)
	case handler == nil:
		return nil, fmt.Errorf("%w: nil handler", ErrConfig)
	case opts.BatchSize < 0 || opts.BatchSize > MaxBatchSize:
		return nil, fmt.Errorf("%w: batch size %d not in 1..%d", ErrConfig, opts.BatchSize, MaxBatchSize)
	}
	switch opts.StartingPosition {
	case "":
		opts.StartingPosition = streamtypes.ShardIteratorTypeTrimHorizon
	case streamtypes.ShardIteratorTypeTrimHorizon, streamtypes.ShardIteratorTypeLatest:
	default:
		return nil, fmt.Errorf("%w: starting position %q: want TRIM_HORIZON or LATEST", ErrConfig, opts.StartingPosition)
	}
	opts.BatchSize = cmp.Or(opts.BatchSize, DefaultBatchSize)
	opts.PollInterval = cmp.Or(opts.PollInterval, 250*time.Millisecond)
	opts.DescribeInterval = cmp.Or(opts.DescribeInterval, 10*time.Second)
	opts.RetryDelay = cmp.Or(opts.RetryDelay, 100*time.Millisecond)
	opts.MaxRetryDelay = max(cmp.Or(opts.MaxRetryDelay, 5*time.Second), opts.RetryDelay)
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Poller{client: client, arn: streamARN, handler: handler, opts: opts,
		log: log.With("stream_arn", streamARN)}, nil
}

// position is where a new shard iterator starts.
type position struct {
	typ streamtypes.ShardIteratorType
	seq string // for AT_ and AFTER_SEQUENCE_NUMBER
}

// shard is the poller's view of one shard.
type shard struct {
	id, parent string
	// from is where the first record not yet handled successfully is.
	from position
	// iterator continues from the last GetRecords; nil means get a new
	// one at from.
	iterator *string
	// ended is set once the shard is closed and read to its end.
	ended bool
	// failures counts consecutive failures; notBefore delays the retry.
	failures  int
	notBefore time.Time
}

// Run polls until ctx is done, then returns nil. It returns an error only
// when the stream does not exist; every other failure is logged and
// retried with backoff.
func (p *Poller) Run(ctx context.Context) error {
	shards := map[string]*shard{}
	var lastDescribe time.Time
	describe, first, describeFailures := true, true, 0
	for ctx.Err() == nil {
		if describe || time.Since(lastDescribe) >= p.opts.DescribeInterval {
			listed, err := p.describe(ctx)
			_, notFound := errors.AsType[*streamtypes.ResourceNotFoundException](err)
			switch {
			case ctx.Err() != nil:
				return nil
			case notFound:
				return fmt.Errorf("streams: describe %s: %w", p.arn, err)
			case err != nil:
				describeFailures++
				delay := backoff(p.opts.RetryDelay, p.opts.MaxRetryDelay, describeFailures)
				p.log.WarnContext(ctx, "describe stream failed, retrying", "failures", describeFailures,
					"retry_in", delay.String(), "err", err)
				if !sleep(ctx, delay) {
					return nil
				}
				continue
			default:
				p.merge(shards, listed, first)
				first, describe, lastDescribe, describeFailures = false, false, time.Now(), 0
			}
		}
		busy := false
		for _, s := range ready(shards, time.Now()) {
			got, ended := p.poll(ctx, s)
			busy = busy || got
			describe = describe || ended
			if ctx.Err() != nil {
				return nil
			}
		}
		if !busy && !sleep(ctx, p.opts.PollInterval) {
			return nil
		}
	}
	return nil
}

// describe lists every shard of the stream, following pagination.
func (p *Poller) describe(ctx context.Context) ([]streamtypes.Shard, error) {
	var all []streamtypes.Shard
	var start *string
	for {
		out, err := p.client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{
			StreamArn: aws.String(p.arn), ExclusiveStartShardId: start,
		})
		if err != nil {
			return nil, err
		}
		if out.StreamDescription == nil {
			return all, nil
		}
		all = append(all, out.StreamDescription.Shards...)
		start = out.StreamDescription.LastEvaluatedShardId
		if start == nil {
			return all, nil
		}
	}
}

// merge adds newly listed shards and forgets ended ones that have left the
// stream. At the first describe, LATEST skips closed shards and starts open
// ones at their tip; shards found later start at TRIM_HORIZON, so no record
// written after Run started is missed.
func (p *Poller) merge(shards map[string]*shard, listed []streamtypes.Shard, first bool) {
	seen := make(map[string]bool, len(listed))
	for _, l := range listed {
		id := aws.ToString(l.ShardId)
		if id == "" {
			continue
		}
		seen[id] = true
		if _, ok := shards[id]; ok {
			continue
		}
		s := &shard{id: id, parent: aws.ToString(l.ParentShardId), from: position{typ: streamtypes.ShardIteratorTypeTrimHorizon}}
		if first && p.opts.StartingPosition == streamtypes.ShardIteratorTypeLatest {
			closed := l.SequenceNumberRange != nil && l.SequenceNumberRange.EndingSequenceNumber != nil
			s.ended = closed
			s.from.typ = streamtypes.ShardIteratorTypeLatest
		}
		shards[id] = s
	}
	for id, s := range shards {
		if s.ended && !seen[id] {
			delete(shards, id)
		}
	}
}

// ready returns the shards to read now, in a stable order: not ended, not
// waiting out a backoff, and whose parent has been read to its end or has
// left the stream.
func ready(shards map[string]*shard, now time.Time) []*shard {
	var out []*shard
	for _, s := range shards {
		if s.ended || now.Before(s.notBefore) {
			continue
		}
		if parent, ok := shards[s.parent]; ok && !parent.ended {
			continue
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *shard) int { return cmp.Compare(a.id, b.id) })
	return out
}

// poll reads one GetRecords page of the shard and hands it to the handler.
// It reports whether records were read and whether the shard ended.
func (p *Poller) poll(ctx context.Context, s *shard) (got, ended bool) {
	log := p.log.With("shard_id", s.id)
	if s.iterator == nil {
		it, err := p.iterator(ctx, s)
		if err != nil {
			p.failed(ctx, log, s, "get shard iterator", err)
			return false, s.ended
		}
		if it == nil { // a closed shard with nothing left
			s.ended = true
			return false, true
		}
		s.iterator = it
	}
	out, err := p.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{
		ShardIterator: s.iterator, Limit: aws.Int32(int32(p.opts.BatchSize)),
	})
	if err != nil {
		p.failed(ctx, log, s, "get records", err)
		return false, s.ended
	}
	records := make([]events.DynamoDBEventRecord, 0, len(out.Records))
	for _, r := range out.Records {
		rec, err := EventRecord(r, p.arn)
		if err != nil {
			// Delivered all the same: the handler decides what an image it
			// cannot read means, as it would in Lambda.
			log.WarnContext(ctx, "stream record image not convertible", "sequence_number", rec.Change.SequenceNumber, "err", err)
		}
		records = append(records, rec)
	}
	next, err := deliver(ctx, p.handler, records, p.opts.BatchSize, s.from)
	s.from = next
	if err != nil {
		if ctx.Err() != nil {
			return true, false
		}
		// Records after the failed one, in this page too, are read again
		// from it, so order within the shard holds.
		s.iterator = nil
		p.retryLater(ctx, log, s, "handler", err)
		return true, false
	}
	s.failures, s.notBefore = 0, time.Time{}
	s.iterator = out.NextShardIterator
	if s.iterator == nil {
		s.ended = true
		log.DebugContext(ctx, "shard ended")
	}
	return len(records) > 0, s.ended
}

// iterator gets a new iterator at s.from. A sequence number the stream
// has trimmed (records older than 24 hours) restarts at TRIM_HORIZON: those
// records are gone, and the oldest still there come next.
func (p *Poller) iterator(ctx context.Context, s *shard) (*string, error) {
	in := &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(p.arn), ShardId: aws.String(s.id), ShardIteratorType: s.from.typ,
	}
	if s.from.seq != "" {
		in.SequenceNumber = aws.String(s.from.seq)
	}
	out, err := p.client.GetShardIterator(ctx, in)
	if err != nil {
		return nil, err
	}
	return out.ShardIterator, nil
}

// failed handles a failed Streams call: an expired iterator is renewed, a
// trimmed position restarts at the oldest record left, a vanished shard
// ends; anything else is retried after a backoff.
func (p *Poller) failed(ctx context.Context, log *slog.Logger, s *shard, op string, err error) {
	if ctx.Err() != nil {
		return
	}
	if _, ok := errors.AsType[*streamtypes.ExpiredIteratorException](err); ok {
		// Iterators live 15 minutes; get a fresh one at the same place.
		s.iterator = nil
		return
	}
	if _, ok := errors.AsType[*streamtypes.TrimmedDataAccessException](err); ok {
		log.WarnContext(ctx, "records trimmed from the stream before they were handled; continuing at the oldest left",
			"op", op, "from_sequence_number", s.from.seq, "err", err)
		s.iterator, s.from = nil, position{typ: streamtypes.ShardIteratorTypeTrimHorizon}
		return
	}
	if _, ok := errors.AsType[*streamtypes.ResourceNotFoundException](err); ok {
		log.WarnContext(ctx, "shard no longer in the stream", "op", op, "err", err)
		s.ended = true
		return
	}
	p.retryLater(ctx, log, s, op, err)
}

// retryLater backs the shard off exponentially after a failure.
func (p *Poller) retryLater(ctx context.Context, log *slog.Logger, s *shard, op string, err error) {
	s.failures++
	delay := backoff(p.opts.RetryDelay, p.opts.MaxRetryDelay, s.failures)
	s.notBefore = time.Now().Add(delay)
	log.WarnContext(ctx, "stream poll failed, retrying", "op", op, "failures", s.failures,
		"retry_in", delay.String(), "from_sequence_number", s.from.seq, "err", err)
}

// ErrBatchFailed reports a batch the handler did not complete: it
// returned an error or listed batchItemFailures.
var ErrBatchFailed = errors.New("streams: batch failed")

// deliver hands records, all from one shard and in order, to handler in
// batches of at most size, and stops at the first batch that fails. It
// returns where the shard must be read from next: after the last record
// when all succeeded, else at the first record to handle again, with an
// error wrapping ErrBatchFailed.
func deliver(ctx context.Context, handler Handler, records []events.DynamoDBEventRecord, size int, from position) (position, error) {
	for batch := range slices.Chunk(records, size) {
		resp, err := handler(ctx, events.DynamoDBEvent{Records: batch})
		i := failedFrom(batch, resp, err)
		from = resumeAt(from, batch, i)
		if i < len(batch) {
			if err != nil {
				return from, fmt.Errorf("%w: handler error: %w", ErrBatchFailed, err)
			}
			return from, fmt.Errorf("%w: from sequence number %s", ErrBatchFailed, batch[i].Change.SequenceNumber)
		}
	}
	return from, nil
}

// failedFrom returns the index of the first record of batch that must be
// handled again, or len(batch) when the whole batch succeeded. It follows
// the event source mapping: a handler error fails the whole batch; among
// batchItemFailures the earliest record in the batch wins; an identifier
// that is empty or names no record of the batch fails the whole batch.
func failedFrom(batch []events.DynamoDBEventRecord, resp events.DynamoDBEventResponse, err error) int {
	if err != nil {
		return 0
	}
	first := len(batch)
	for _, f := range resp.BatchItemFailures {
		i := slices.IndexFunc(batch, func(r events.DynamoDBEventRecord) bool {
			return r.Change.SequenceNumber == f.ItemIdentifier
		})
		if f.ItemIdentifier == "" || i < 0 {
			return 0
		}
		first = min(first, i)
	}
	return first
}

// resumeAt returns where to read again after handling batch up to (not
// including) index i, given that the batch started at from: just after the
// last record when all succeeded, at the failed record otherwise. A record
// without a sequence number leaves from as it was, so the batch is retried
// whole rather than skipped.
func resumeAt(from position, batch []events.DynamoDBEventRecord, i int) position {
	if i >= len(batch) {
		if len(batch) == 0 {
			return from
		}
		if seq := batch[len(batch)-1].Change.SequenceNumber; seq != "" {
			return position{typ: streamtypes.ShardIteratorTypeAfterSequenceNumber, seq: seq}
		}
		return from
	}
	if seq := batch[i].Change.SequenceNumber; seq != "" {
		return position{typ: streamtypes.ShardIteratorTypeAtSequenceNumber, seq: seq}
	}
	return from
}

// backoff is base doubled per failure after the first, capped at limit.
func backoff(base, limit time.Duration, failures int) time.Duration {
	d := base
	for i := 1; i < failures && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// sleep waits d or until ctx is done, reporting whether it waited fully.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// TableDescriber is the DynamoDB call LatestStreamARN makes;
// *dynamodb.Client implements it.
type TableDescriber interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// ErrNoStream reports a table without an enabled stream, or a backend that
// does not implement Streams (the embedded test server).
var ErrNoStream = errors.New("streams: table has no stream")

// LatestStreamARN returns the ARN of the table's current stream, the one a
// Poller reads.
func LatestStreamARN(ctx context.Context, client TableDescriber, table string) (string, error) {
	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return "", fmt.Errorf("streams: describe table %s: %w", table, err)
	}
	if out.Table == nil || aws.ToString(out.Table.LatestStreamArn) == "" {
		return "", fmt.Errorf("%w: %s", ErrNoStream, table)
	}
	return *out.Table.LatestStreamArn, nil
}
