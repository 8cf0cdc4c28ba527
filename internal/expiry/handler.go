package expiry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/internal/metrics"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
)

// The callers table's window counters, as internal/access writes them
// (its test holds the two together; the sweeper links none of access's
// HTTP plumbing).
const (
	// CallerID is the callers table's key attribute.
	CallerID = "id"
	// WindowPrefix begins every window counter's key.
	WindowPrefix = "window|"
	// CallerExpiresAt is a window counter's expiry, the end of its window.
	CallerExpiresAt = "expires_at"
)

// Outbox is the outbox table, whose items expire outbox.DefaultRetention
// (7 days) after their event: long past the day its stream keeps the
// records that may still deliver them.
func Outbox(name string) Table {
	return Table{Name: name, Key: []string{outbox.AttrAggregateID, outbox.AttrEventID}, Expires: outbox.AttrExpiresAt}
}

// Windows is the callers table's window counters; its grants never
// expire and are never swept.
func Windows(name string) Table {
	return Table{Name: name, Key: []string{CallerID}, Expires: CallerExpiresAt, PrefixAttribute: CallerID, Prefix: WindowPrefix}
}

// CheckpointID is the key, in the idempotency table, of the item where a
// sweep that ran out of time leaves where each table's sweep resumes.
// It has none of a record's attributes, so no sweep of records reads it.
const CheckpointID = "!sweep|checkpoint"

// Records is the idempotency store Handler sweeps the records of;
// *idem.Store is one.
type Records interface {
	Sweep(ctx context.Context, opts idem.SweepOptions) (idem.SweepStats, error)
}

// CheckpointAPI is what Handler calls on DynamoDB besides API: the
// checkpoint's read and write; *dynamodb.Client has it.
type CheckpointAPI interface {
	API
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// Margin is how long before the invocation's deadline Handler starts no
// more page: a page of 100 deletes takes about a second, and the
// checkpoint's write must land before Lambda stops the function.
const Margin = 10 * time.Second

// Config is what a Handler sweeps, and how much of it per invocation.
type Config struct {
	// IdempotencyTable holds the records (swept by Records) and the
	// checkpoint.
	IdempotencyTable string
	// Outbox and Windows are the other two tables' expiring items.
	Outbox, Windows Table
	// PageSize is each page's Scan Limit: 100 when 0.
	PageSize int32
	// MaxPages bounds the pages of one invocation, over the three tables
	// (0: only the deadline does).
	MaxPages int
	// Margin is how long before the context's deadline no page starts:
	// the package's Margin when 0.
	Margin time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Handler is the sweeper function: each invocation sweeps the three
// tables a page of each in turn, until every one is swept to its end, the
// deadline is Margin away, or MaxPages were read; then it records where
// each stopped (the checkpoint), so the next invocation resumes there. A
// table whose sweep fails is left at the failed page for the next
// invocation, the others go on, and the invocation ends in error (the
// function's Errors alarm).
type Handler struct {
	db      CheckpointAPI
	records Records
	cfg     Config
	log     *slog.Logger
	rec     *metrics.Recorder
}

// NewHandler returns the sweeper's handler.
func NewHandler(db CheckpointAPI, records Records, cfg Config, log *slog.Logger, rec *metrics.Recorder) (*Handler, error) {
	if db == nil || records == nil || log == nil || rec == nil {
		return nil, errors.New("expiry: a handler needs a client, a store, a logger and a recorder")
	}
	if cfg.IdempotencyTable == "" || cfg.Outbox.Name == "" || cfg.Windows.Name == "" {
		return nil, errors.New("expiry: a handler needs the idempotency, outbox and callers tables")
	}
	if cfg.Margin <= 0 {
		cfg.Margin = Margin
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Handler{db: db, records: records, cfg: cfg, log: log, rec: rec}, nil
}

// Result is what one invocation did, per table (the function's answer to
// a manual invoke; the log line holds the same).
type Result struct {
	Idempotency TableResult `json:"idempotency"`
	Outbox      TableResult `json:"outbox"`
	Windows     TableResult `json:"windows"`
	// Failed counts the tables whose sweep met an error.
	Failed int `json:"failed"`
}

// TableResult is one table's part of an invocation.
type TableResult struct {
	Pages   int `json:"pages"`
	Expired int `json:"expired"`
	Deleted int `json:"deleted"`
	// Kept counts expired items renewed, or deleted by another sweeper,
	// between the read and the delete; Applied the records whose
	// stranded writes were applied (idempotency only).
	Kept    int `json:"kept"`
	Applied int `json:"applied,omitempty"`
	// Done is true when the table was swept to its end.
	Done bool `json:"done"`
}

// checkpoint attribute names: where each table's sweep resumes.
const (
	attrRecords = "records"
	attrOutbox  = "outbox"
	attrWindows = "windows"
)

// sweeper is one table's sweep within an invocation.
type sweeper struct {
	attr string
	next map[string]types.AttributeValue
	done bool
	err  error
	res  *TableResult
	page func(ctx context.Context, start map[string]types.AttributeValue) (map[string]types.AttributeValue, error)
}

// Handle runs one invocation.
func (h *Handler) Handle(ctx context.Context) (Result, error) {
	began := h.cfg.Now()
	var res Result
	cp, err := h.load(ctx)
	if err != nil {
		res.Failed = 1
		h.record(ctx, res, began)
		return res, err
	}
	pageOpts := Options{PageSize: h.cfg.PageSize, MaxPages: 1, Now: h.cfg.Now}
	tables := []*sweeper{
		{attr: attrRecords, res: &res.Idempotency, page: func(ctx context.Context, start map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
			st, err := h.records.Sweep(ctx, idem.SweepOptions{PageSize: h.cfg.PageSize, MaxPages: 1, Start: start})
			res.Idempotency.Pages += st.Pages
			res.Idempotency.Expired += st.Scanned
			res.Idempotency.Deleted += st.Deleted
			res.Idempotency.Applied += st.Applied
			return st.Next, err
		}},
		{attr: attrOutbox, res: &res.Outbox, page: h.pager(h.cfg.Outbox, pageOpts, &res.Outbox)},
		{attr: attrWindows, res: &res.Windows, page: h.pager(h.cfg.Windows, pageOpts, &res.Windows)},
	}
	for _, t := range tables {
		t.next = cp[t.attr]
	}
	pages := 0
	for h.timeLeft(ctx) && (h.cfg.MaxPages <= 0 || pages < h.cfg.MaxPages) {
		ran := false
		for _, t := range tables {
			if t.done || t.err != nil || !h.timeLeft(ctx) || (h.cfg.MaxPages > 0 && pages >= h.cfg.MaxPages) {
				continue
			}
			ran = true
			pages++
			next, err := t.page(ctx, t.next)
			if err != nil {
				t.err = err
				res.Failed++
				h.log.ErrorContext(ctx, "sweep failed", "table", t.attr, "err", err)
				continue
			}
			t.next = next
			t.done = len(next) == 0
			t.res.Done = t.done
		}
		if !ran {
			break
		}
	}
	errs := make([]error, 0, len(tables)+1)
	for _, t := range tables {
		if t.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.attr, t.err))
		}
	}
	if err := h.save(ctx, tables); err != nil {
		res.Failed++
		errs = append(errs, err)
	}
	h.record(ctx, res, began)
	return res, errors.Join(errs...)
}

// pager sweeps one page of t.
func (h *Handler) pager(t Table, opts Options, res *TableResult) func(ctx context.Context, start map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	return func(ctx context.Context, start map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
		opts.Start = start
		st, err := Sweep(ctx, h.db, t, opts)
		res.Pages += st.Pages
		res.Expired += st.Expired
		res.Deleted += st.Deleted
		res.Kept += st.Kept
		return st.Next, err
	}
}

// timeLeft is true while the context's deadline, if any, is more than
// the margin away.
func (h *Handler) timeLeft(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	deadline, ok := ctx.Deadline()
	return !ok || deadline.Sub(h.cfg.Now()) > h.cfg.Margin
}

// load reads the checkpoint: where each table's sweep resumes, none for
// a table to sweep from its start.
func (h *Handler) load(ctx context.Context) (map[string]map[string]types.AttributeValue, error) {
	out, err := h.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(h.cfg.IdempotencyTable), Key: checkpointKey(), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("expiry: read the checkpoint: %w", err)
	}
	cp := map[string]map[string]types.AttributeValue{}
	for _, a := range []string{attrRecords, attrOutbox, attrWindows} {
		if m, ok := out.Item[a].(*types.AttributeValueMemberM); ok && len(m.Value) > 0 {
			cp[a] = m.Value
		}
	}
	return cp, nil
}

// save writes the checkpoint: each table's resume point, none for a
// table swept to its end (the next invocation starts it over).
func (h *Handler) save(ctx context.Context, tables []*sweeper) error {
	item := checkpointKey()
	item["swept_at"] = &types.AttributeValueMemberS{Value: h.cfg.Now().UTC().Format(time.RFC3339)}
	for _, t := range tables {
		if !t.done && len(t.next) > 0 {
			item[t.attr] = &types.AttributeValueMemberM{Value: t.next}
		}
	}
	// Written even when the invocation is out of time: the margin is
	// there for it.
	ctx = context.WithoutCancel(ctx)
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Margin)
	defer cancel()
	if _, err := h.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(h.cfg.IdempotencyTable), Item: item}); err != nil {
		return fmt.Errorf("expiry: write the checkpoint: %w", err)
	}
	return nil
}

func checkpointKey() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{idemtable.KeyAttribute: &types.AttributeValueMemberS{Value: CheckpointID}}
}

// record writes the invocation's log line and metrics line.
func (h *Handler) record(ctx context.Context, res Result, began time.Time) {
	elapsed := h.cfg.Now().Sub(began)
	var m metrics.Sweep
	for _, t := range []TableResult{res.Idempotency, res.Outbox, res.Windows} {
		m.Pages += t.Pages
		m.Expired += t.Expired
		m.Deleted += t.Deleted
		m.Kept += t.Kept
		m.Applied += t.Applied
	}
	m.Failed = res.Failed
	h.rec.Sweep(ctx, m, elapsed)
	h.log.InfoContext(ctx, "swept", "idempotency", res.Idempotency, "outbox", res.Outbox, "windows", res.Windows,
		"failed", res.Failed, "ms", elapsed.Milliseconds())
}
