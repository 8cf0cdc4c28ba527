package idemconform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// Way is a way into pkg/idem under test: an adapter, as its adopters
// configure it, and the source that delivers to it.
type Way struct {
	// Name names the way in its tests (TestX/<Name>/<fault>/...) and in
	// the table.
	Name string
	// Source is how requests reach the way, and so how they are
	// delivered again.
	Source Source
	// Effect is what the operation does: Outside, or Writes.
	Effect Effect
	// Deadline is whether its invocations run with a deadline.
	Deadline Deadline
	// ClaimFirst, for an Effect of Writes: the key is claimed, and its
	// lease held, before the writes are computed (Store.Execute); false
	// when the claim commits with the writes (Store.Transact, the
	// batches). An Outside effect always runs under a lease.
	ClaimFirst bool
	// Deliver is one invocation of the way: it hands inv's requests (one,
	// or a Queue's or Stream's batch) to the adapter, as the source would,
	// using inv's store, and returns what the source saw of each, in
	// order. The adapter's effect is inv.Effect (Outside) or inv.Writes
	// (Writes); inv.Begin and inv.BatchWrites for writes shared by a
	// batch; inv.Handle for an HTTP handler.
	Deliver func(ctx context.Context, inv *Invocation) []Answer
}

// Source is how a way's requests are delivered, and delivered again.
type Source int

const (
	// Requests: callers or HTTP clients that retry the same key with
	// backoff, waiting at least an answer's RetryAfter, until a definitive
	// answer (OK, KeyReuse, Refused, a Failed or NotRecorded answer
	// without Redeliver) or 8 attempts. Each delivery is one invocation
	// of one request.
	Requests Source = iota
	// Async: Lambda's asynchronous invocation, retried after a minute and
	// two more on an error, a timeout or a crash.
	Async
	// Queue: an SQS standard queue, whose batches of up to 3 messages go
	// to 4 consumers: a message not acknowledged (an answer that is not
	// OK or NotRecorded, or one with Redeliver) is received again after
	// its visibility timeout, up to 5 times, then dead-lettered; some
	// messages are received by two consumers at once.
	Queue
	// Stream: a Kinesis or DynamoDB stream of 4 shards, each read in
	// order in batches of up to 3 records: the shard goes on past the
	// records answered before the one marked Checkpoint (or past the whole
	// batch when none is), and retries from that one after 30 s; a crash
	// retries the batch. A record failed 5 times goes to the on-failure
	// destination.
	Stream
)

func (s Source) String() string {
	switch s {
	case Requests:
		return "requests"
	case Async:
		return "async"
	case Queue:
		return "queue"
	case Stream:
		return "stream"
	}
	return "Source(" + strconv.Itoa(int(s)) + ")"
}

// Effect is what a way's operation does, and so what exactly once means
// for it.
type Effect int

const (
	// Outside: an effect outside DynamoDB (an e-mail, a payment),
	// completed with a fenced write after it ran (Store.Run, idem.Do). It
	// may run again only in Run's documented window: the process died
	// after it, or its completion could not be written and was reported
	// as not recorded. The harness counts its executions.
	Outside Effect = iota
	// Writes: DynamoDB writes committed with the key's completion in one
	// TransactWriteItems. It runs exactly once; the harness counts the
	// writes that landed.
	Writes
)

// Deadline is whether a way's invocations run with a deadline.
type Deadline int

const (
	// DeadlineLambda: every invocation has the function's deadline (10 s),
	// and one still running at it stops its environment, as Lambda does.
	DeadlineLambda Deadline = iota
	// DeadlineNone: no invocation has one (a net/http server): a holder's
	// lease is renewed by its heartbeat.
	DeadlineNone
	// DeadlineEither: a call into the store, which runs either way: with
	// the Lambda deadline, and without one under the renewal faults.
	DeadlineEither
)

// Payload is what a request asks for: its key and a variant of the
// payload, never who asks (the principal says that), so two callers'
// requests for one key are the same payload. A way fingerprints it
// (idem.Fingerprint) or sends it as a body.
type Payload struct {
	Key     string `json:"key"`
	Variant string `json:"variant"`
}

// Message is a request as a queue message, an event or a stream record
// carries it (Request.Message, ParseMessage).
type Message struct {
	// Principal is what the caller's principal function returns: the
	// tenant the message is from ("" names nobody).
	Principal string `json:"tenant"`
	Caller    string `json:"caller"`
	Key       string `json:"key"`
	Variant   string `json:"variant"`
	// Poison marks a message its decoder must refuse (ParseMessage does).
	Poison bool `json:"poison,omitempty"`
}

// Payload is what m asks for.
func (m Message) Payload() Payload { return Payload{Key: m.Key, Variant: m.Variant} }

// ErrPoison is ParseMessage's refusal of a poison message: an answer
// whose Err wraps it is Refused (FromRecord).
var ErrPoison = errors.New("idemconform: poison message")

// ParseMessage decodes a Message from its JSON, refusing a poison
// message with an error that wraps ErrPoison.
func ParseMessage(b []byte) (Message, error) {
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("idemconform: decode a message: %w", err)
	}
	if m.Poison {
		return m, fmt.Errorf("%w: %s|%s", ErrPoison, m.Caller, m.Key)
	}
	return m, nil
}

// Request is one request of the workload, as every delivery of it
// carries it.
type Request struct{ a *actor }

// ID is the request's own identifier, the same on each delivery: an SQS
// message ID, a stream record's sequence number, an event's ID.
func (r *Request) ID() string { return r.a.msgID() }

// Caller is who sends it.
func (r *Request) Caller() string { return r.a.caller }

// Principal is what the caller's principal function returns: the caller,
// or "" for a caller it names nobody for (the empty-principal fault),
// whom the way must refuse.
func (r *Request) Principal() string { return r.a.principal() }

// Key is the request's idempotency key.
func (r *Request) Key() string { return r.a.key }

// Payload is what it asks for.
func (r *Request) Payload() Payload { return r.a.order() }

// Poison reports a message the way's decoder must refuse.
func (r *Request) Poison() bool { return r.a.poison }

// Message is the request as a message carries it.
func (r *Request) Message() Message {
	a := r.a
	return Message{Principal: a.principal(), Caller: a.caller, Key: a.key, Variant: a.variant, Poison: a.poison}
}

// Body is the request's JSON body: its Message.
func (r *Request) Body() []byte {
	b, _ := json.Marshal(r.Message())
	return b
}

// Reply is what an execution answers with: who it ran for and which
// execution it was, so two executions, or a response served to the wrong
// caller, differ byte for byte.
type Reply struct {
	Caller  string `json:"caller"`
	Key     string `json:"key"`
	Variant string `json:"variant"`
	Exec    int    `json:"exec"`
}

// JSON is the reply's JSON: the body of every answer that carries it.
func (r Reply) JSON() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Response is the reply as a stored response: a JSON body with its
// Content-Type, and the execution in X-Exec.
func (r Reply) Response() idem.Response {
	return idem.Response{
		Meta: map[string]string{"Content-Type": "application/json", "X-Exec": strconv.Itoa(r.Exec)},
		Body: []byte(r.JSON()),
	}
}

// ResponseAnswer renders a stored response as the Body of an answer: the
// way an HTTP client would see it, with status 201.
func ResponseAnswer(r idem.Response) string {
	h := http.Header{}
	for k, v := range r.Meta {
		h.Set(k, v)
	}
	return httpAnswer(http.StatusCreated, h, r.Body)
}

// Class is what a source saw of one delivery.
type Class string

const (
	// OK is a success: a fresh or replayed answer; for a queue or a
	// stream, the record acknowledged.
	OK Class = "ok"
	// InFlight: another caller holds the key (409, idem.ErrInFlight).
	InFlight Class = "in-flight"
	// Unavailable: the store was busy or out of reach (503,
	// idem.IsUnavailable), or the record was not tried: deliver it again.
	Unavailable Class = "unavailable"
	// LeaseLost: the holder was fenced out and wrote nothing
	// (idem.ErrLeaseLost).
	LeaseLost Class = "lease-lost"
	// KeyReuse: the key was used with another payload (422,
	// idem.ErrKeyReuse).
	KeyReuse Class = "key-reuse"
	// Refused: refused before the store (400, 403, idem.ErrInvalidKey, a
	// poison message).
	Refused Class = "refused"
	// Failed: the effect failed on purpose (the workload's one failure),
	// or the store refused its transaction for good: the key released,
	// nothing applied.
	Failed Class = "failed"
	// NotRecorded: the effect ran, its completion could not be recorded
	// (idem.ErrNotRecorded), and the source was told the effect's answer.
	NotRecorded Class = "not-recorded"
	// Unclassified: anything else (a 500, an error none of the library's
	// classes names). It is a violation.
	Unclassified Class = "UNCLASSIFIED"

	// unknown: the environment stopped during the delivery; only the
	// harness gives it.
	unknown Class = "unknown"
)

// Answer is what a source saw of one delivery. FromCall, FromHTTP and
// FromRecord make one from what the library's ways answer; a way with
// answers of its own sets the fields.
type Answer struct {
	Class Class
	// Body is the exact answer of an OK or NotRecorded delivery, which
	// every replay must repeat byte for byte: it holds the Reply's JSON,
	// as it is or after a blank line (ResponseAnswer, an HTTP answer), or
	// is "ack" for a record that carries none.
	Body string
	// RetryAfter is an InFlight's or Unavailable's wait (default 1 s).
	RetryAfter time.Duration
	// Err is the error behind the answer, as the library returned it: for
	// NotRecorded it tells a holder fenced out (idem.ErrLeaseLost) and a
	// deadline (context.DeadlineExceeded) from a completion refused; for
	// Failed, a transaction the store refused for good.
	Err error
	// Outcome is the outcome the library reported, when it reports one:
	// the harness checks it against the answer.
	Outcome idem.Outcome
	// Redeliver says the answer asks the source to deliver the request
	// again: an HTTP client retrying a 503, a batch item failure, an
	// error returned to Lambda.
	Redeliver bool
	// Checkpoint, for a Stream: the shard resumes from this record.
	Checkpoint bool
	// Untried, for a Stream: a record after the checkpoint, not applied.
	Untried bool
	// Detail says why, for the report.
	Detail string
}

// ack is the answer of an acknowledged record, which carries no reply.
const ack = "ack"

// FromCall is the answer of a call into the store (Execute, Transact,
// Run, Do, an ExecuteBatch item, a wrapped handler): the outcome and error
// it returned, and body, the rendering of its answer (ResponseAnswer, or
// the Reply's JSON). A definitive failure is only ever the workload's
// deliberate one or a transaction the store refused for good; any other
// error the store released the key for is Unclassified.
func FromCall(outcome idem.Outcome, err error, body string) Answer {
	var inflight *idem.InFlightError
	a := Answer{Err: err, Outcome: outcome, Detail: errText(err)}
	switch {
	case err == nil:
		a.Class, a.Body = OK, body
	case errors.Is(err, idem.ErrNotRecorded):
		a.Class, a.Body = NotRecorded, body
	case errors.As(err, &inflight):
		a.Class, a.RetryAfter = InFlight, inflight.RetryAfter
	case errors.Is(err, idem.ErrInFlight):
		a.Class = InFlight
	case errors.Is(err, idem.ErrKeyReuse):
		a.Class = KeyReuse
	case errors.Is(err, idem.ErrInvalidKey), errors.Is(err, ErrPoison):
		a.Class = Refused
	case errors.Is(err, ErrDeclined):
		a.Class = Failed
	case errors.Is(err, idem.ErrLeaseLost):
		a.Class = LeaseLost
	case idem.IsUnavailable(err):
		a.Class = Unavailable
	case outcome == idem.OutcomeReleased && refusedForGood(err):
		// The store refused the transaction for good: the key is
		// released, nothing was applied, and no retry can help.
		a.Class = Failed
	default:
		a.Class, a.Detail = Unclassified, fmt.Sprintf("outcome %q: %v", outcome, err)
	}
	return a
}

// FromRecord is the answer of one queue message or stream record: the
// outcome and error the batch's result gives it, and whether the answer
// to the runtime acknowledged it (it is not a batch item failure).
func FromRecord(outcome idem.Outcome, err error, acked bool) Answer {
	switch {
	case err == nil && acked:
		return Answer{Class: OK, Body: ack, Outcome: outcome}
	case err == nil:
		return Answer{Class: Unclassified, Detail: "no error, yet the answer asks for it again"}
	case errors.Is(err, idem.ErrNotRecorded):
		return Answer{Class: NotRecorded, Body: ack, Err: err, Outcome: outcome, Redeliver: !acked, Detail: fmt.Sprintf("outcome %q: %v", outcome, err)}
	case acked:
		return Answer{Class: Unclassified, Detail: fmt.Sprintf("acknowledged with an error: %s: %v", outcome, err)}
	}
	a := FromCall(outcome, err, "")
	a.Redeliver = true
	return a
}

// Handle is an HTTP handler's work for r, as the library's HTTP ways'
// handlers do it: the effect (inv.Effect), then 201 with the reply's JSON,
// Content-Type and X-Exec. An effect that failed on purpose (header
// X-Declined) or could not run (X-Not-Run) is a 503 of the handler's own,
// which no middleware stores; FromHTTP reads both.
func (inv *Invocation) Handle(ctx context.Context, r *Request) (int, http.Header, []byte) {
	h := http.Header{}
	reply, err := inv.Effect(ctx, r)
	if err != nil {
		if errors.Is(err, ErrDeclined) {
			h.Set("X-Declined", err.Error())
		} else {
			h.Set("X-Not-Run", err.Error())
		}
		return http.StatusServiceUnavailable, h, []byte(`{"error":"try again"}`)
	}
	h.Set("Content-Type", "application/json")
	h.Set("X-Exec", strconv.Itoa(reply.Exec))
	return http.StatusCreated, h, []byte(reply.JSON())
}

// FromHTTP is the answer of an HTTP response to a request whose handler
// is inv.Handle: 201 is OK (NotRecorded when the store reported that its
// completion could not be written), the handler's own 503s are Failed
// and Unavailable, and the middleware's problems (application/problem+json)
// 409, 503, 422, 400 and 403 are InFlight, Unavailable, KeyReuse and
// Refused. Anything else is Unclassified.
func FromHTTP(status int, h http.Header, body []byte) Answer {
	answer := httpAnswer(status, h, body)
	retryAfter := time.Second
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil {
		retryAfter = time.Duration(s) * time.Second
	}
	problem := strings.HasPrefix(h.Get("Content-Type"), contentTypeProblem)
	switch {
	case status == http.StatusCreated && !problem:
		return Answer{Class: OK, Body: answer}
	case h.Get("X-Declined") != "":
		return Answer{Class: Failed, Redeliver: true, Detail: "the handler answered " + strconv.Itoa(status) + ": " + h.Get("X-Declined")}
	case h.Get("X-Not-Run") != "":
		return Answer{Class: Unavailable, RetryAfter: retryAfter, Detail: "the handler answered " + strconv.Itoa(status) + ": " + h.Get("X-Not-Run")}
	case !problem:
	case status == http.StatusConflict:
		return Answer{Class: InFlight, RetryAfter: retryAfter, Detail: "409"}
	case status == http.StatusServiceUnavailable:
		return Answer{Class: Unavailable, RetryAfter: retryAfter, Detail: "503"}
	case status == http.StatusUnprocessableEntity:
		return Answer{Class: KeyReuse, Detail: "422"}
	case status == http.StatusBadRequest || status == http.StatusForbidden:
		return Answer{Class: Refused, Detail: strconv.Itoa(status)}
	}
	return Answer{Class: Unclassified, Detail: fmt.Sprintf("HTTP %d: %s", status, short(string(body)))}
}

// contentTypeProblem is RFC 9457's media type.
const contentTypeProblem = "application/problem+json"

// refusedForGood reports whether err is a transaction cancelled with a
// ValidationError reason.
func refusedForGood(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	for _, r := range tce.CancellationReasons {
		if r.Code != nil && *r.Code == "ValidationError" {
			return true
		}
	}
	return false
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
