package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemevent"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemsqs"
)

// outcomeNotRecorded is the outcome of a call whose effect ran but whose
// completion could not be recorded (issue 26: idem.OutcomeNotRecorded).
const outcomeNotRecorded idem.Outcome = "not_recorded"

// sourceKind is how a way in's deliveries come.
type sourceKind int

const (
	requests sourceKind = iota // a caller or HTTP client retrying with backoff
	async                      // Lambda's asynchronous invocations: two retries
	queue                      // SQS: redelivery until acknowledged or 5 receives
	stream                     // a stream's shards: in order, retried from the record an answer names
)

// way is one way into the library, driven as its adopters drive it.
type way struct {
	name   string
	source sourceKind
	// dbEffect: the effect is DynamoDB writes committed with the
	// completion, counted from the table.
	dbEffect bool
	// transaction: it writes with TransactWriteItems, which a fault can
	// cancel.
	transaction bool
	// leaseWhileRunning: the effect runs under a lease the store holds
	// (Transact and the batches claim in their commit).
	leaseWhileRunning bool
	// lambda: its invocations have a deadline (net/http's do not).
	lambda bool
	// canRunWithoutDeadline: the renewal cells run it without one.
	canRunWithoutDeadline bool
	// retryFailed: its source retries a failure on purpose (HTTP clients
	// retry a 503; a caller of the store is told a definitive failure).
	retryFailed bool

	deliver      func(ctx context.Context, w *world, c *call, a *actor) outcome
	deliverBatch func(ctx context.Context, w *world, c *call, as []*actor) []outcome
}

var ways = []*way{
	{name: "Execute", source: requests, dbEffect: true, transaction: true, leaseWhileRunning: true, lambda: true, canRunWithoutDeadline: true, deliver: deliverExecute(false)},
	{name: "Transact", source: requests, dbEffect: true, transaction: true, lambda: true, deliver: deliverExecute(true)},
	{name: "Run", source: requests, leaseWhileRunning: true, lambda: true, canRunWithoutDeadline: true, deliver: deliverRun},
	{name: "Do", source: requests, leaseWhileRunning: true, lambda: true, canRunWithoutDeadline: true, deliver: deliverDo},
	{name: "ExecuteBatch", source: queue, dbEffect: true, transaction: true, lambda: true, deliverBatch: deliverExecuteBatch},
	{name: "idemhttp.APIGatewayV2", source: requests, leaseWhileRunning: true, lambda: true, retryFailed: true, deliver: deliverAPIGatewayV2},
	{name: "idemhttp.Handler", source: requests, leaseWhileRunning: true, canRunWithoutDeadline: true, retryFailed: true, deliver: deliverHandler},
	{name: "idemevent", source: async, leaseWhileRunning: true, lambda: true, retryFailed: true, deliver: deliverEvent},
	{name: "idemsqs.Run", source: queue, leaseWhileRunning: true, lambda: true, retryFailed: true, deliverBatch: deliverSQSRun},
	{name: "idemsqs.Transact", source: queue, dbEffect: true, transaction: true, lambda: true, retryFailed: true, deliverBatch: deliverSQSTransact},
}

// response is what an execution answers with, through the store.
func response(r reply) idem.Response {
	return idem.Response{
		Meta: map[string]string{"Content-Type": "application/json", "X-Exec": strconv.Itoa(r.Exec)},
		Body: []byte(r.JSON()),
	}
}

// answerOf renders a store response as a client compares it.
func answerOf(r idem.Response) string {
	h := http.Header{}
	for k, v := range r.Meta {
		h.Set(k, v)
	}
	return httpAnswer(http.StatusCreated, h, r.Body)
}

func (c *call) answered(a *actor, answer string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ex := c.execs[a]; ex != nil {
		ex.answer = answer
	}
}

// classify names the answer of a call into the store (Execute, Transact,
// Run, Do, an ExecuteBatch item): res and err as returned, answer the
// rendering of res's response. A definitive failure is only ever the
// workload's deliberate one (errDeclined) or, in the cell that injects
// them, a transaction the store refused for good (ValidationError): any
// other error the store released the key for (a throttled transaction
// read as refused, say) is unclassified.
func (w *world) classify(res idem.Result, err error, answer string) outcome {
	var inflight *idem.InFlightError
	switch {
	case err == nil:
		return outcome{class: classOK, answer: answer}
	case errors.Is(err, idem.ErrNotRecorded):
		out := outcome{class: classNotRecorded, answer: answer, detail: err.Error(), fencedOut: errors.Is(err, idem.ErrLeaseLost), outOfTime: errors.Is(err, context.DeadlineExceeded)}
		if res.Outcome != outcomeNotRecorded && !(res.Outcome == idem.OutcomeLeaseLost && errors.Is(err, idem.ErrLeaseLost)) {
			out.wrong = fmt.Sprintf("the call returned an error wrapping idem.ErrNotRecorded with Outcome %q (intended: %q)", res.Outcome, outcomeNotRecorded)
		}
		return out
	case errors.As(err, &inflight):
		return outcome{class: classInFlight, retryAfter: inflight.RetryAfter, detail: err.Error()}
	case errors.Is(err, idem.ErrInFlight):
		return outcome{class: classInFlight, retryAfter: time.Second, detail: err.Error()}
	case errors.Is(err, idem.ErrKeyReuse):
		return outcome{class: classKeyReuse, detail: err.Error()}
	case errors.Is(err, idem.ErrInvalidKey):
		return outcome{class: classRefused, detail: err.Error()}
	case errors.Is(err, errDeclined):
		return outcome{class: classFailed, detail: err.Error()}
	case errors.Is(err, idem.ErrLeaseLost):
		return outcome{class: classLeaseLost, detail: err.Error()}
	case idem.IsUnavailable(err):
		return outcome{class: classUnavailable, retryAfter: time.Second, detail: err.Error()}
	case res.Outcome == idem.OutcomeReleased && w.cell.fault.refusal && refusedForGood(err):
		// The store refused the transaction for good: the key is
		// released, nothing was applied, and no retry can help.
		w.refusalsTold.Add(1)
		return outcome{class: classFailed, detail: err.Error()}
	}
	return outcome{class: classUnclassified, detail: fmt.Sprintf("outcome %q: %v", res.Outcome, err)}
}

// refusedForGood reports whether err is a transaction cancelled with a
// ValidationError reason.
func refusedForGood(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	for _, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) == "ValidationError" {
			return true
		}
	}
	return false
}

// refusedScope is the outcome of a scope idem.NewScope refused.
func refusedScope(err error) outcome {
	if errors.Is(err, idem.ErrInvalidKey) {
		return outcome{class: classRefused, detail: err.Error()}
	}
	return outcome{class: classUnclassified, detail: "idem.NewScope: " + err.Error()}
}

func deliverExecute(transact bool) func(ctx context.Context, w *world, c *call, a *actor) outcome {
	return func(ctx context.Context, w *world, c *call, a *actor) outcome {
		sc, err := a.newScope()
		if err != nil {
			return refusedScope(err)
		}
		fn := func(ctx context.Context) (idem.Effect, error) {
			r, writes, err := w.dbEffect(ctx, c, a)
			if err != nil {
				return idem.Effect{}, err
			}
			resp := response(r)
			c.answered(a, answerOf(resp))
			return idem.Effect{Response: resp, Writes: writes}, nil
		}
		var res idem.Result
		if transact {
			res, err = c.env.store.Transact(ctx, sc, a.fingerprint(), fn)
		} else {
			res, err = c.env.store.Execute(ctx, sc, a.fingerprint(), fn)
		}
		return w.classify(res, err, answerOf(res.Response))
	}
}

func deliverRun(ctx context.Context, w *world, c *call, a *actor) outcome {
	sc, err := a.newScope()
	if err != nil {
		return refusedScope(err)
	}
	res, err := c.env.store.Run(ctx, sc, a.fingerprint(), func(ctx context.Context) (idem.Response, error) {
		r, err := w.outsideEffect(ctx, c, a)
		if err != nil {
			return idem.Response{}, err
		}
		resp := response(r)
		c.answered(a, answerOf(resp))
		return resp, nil
	})
	return w.classify(res, err, answerOf(res.Response))
}

func deliverDo(ctx context.Context, w *world, c *call, a *actor) outcome {
	sc, err := a.newScope()
	if err != nil {
		return refusedScope(err)
	}
	v, o, err := idem.Do(ctx, c.env.store, sc, a.fingerprint(), func(ctx context.Context) (reply, error) {
		r, err := w.outsideEffect(ctx, c, a)
		if err == nil {
			c.answered(a, r.JSON())
		}
		return r, err
	})
	return w.classify(idem.Result{Outcome: o}, err, v.JSON())
}

// deliverExecuteBatch hands a queue's batch to ExecuteBatch: each message
// an item, answered with an execution's reply, and the shared writes the
// executing items' effects.
func deliverExecuteBatch(ctx context.Context, w *world, c *call, as []*actor) []outcome {
	outs := make([]outcome, len(as))
	var items []idem.BatchItem
	var of []int
	execs := map[int]*execution{}
	for i, a := range as {
		if a.poison {
			outs[i] = outcome{class: classRefused, detail: "poison: the message does not decode"}
			continue
		}
		sc, err := a.newScope()
		if err != nil {
			outs[i] = refusedScope(err)
			continue
		}
		ex := w.begin(c, a)
		r := reply{Caller: a.caller, Key: a.key, Variant: a.variant, Exec: ex.n}
		c.answered(a, answerOf(response(r)))
		execs[len(items)] = ex
		items = append(items, idem.BatchItem{Scope: sc, Fingerprint: a.fingerprint(), Response: response(r)})
		of = append(of, i)
	}
	if len(items) == 0 {
		return outs
	}
	res, err := c.env.store.ExecuteBatch(ctx, items, func(executing []int, _ []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
		if w.take(&w.crashBefore) {
			c.env.crash("crash point: before the effect")
			return nil, context.Canceled
		}
		if err := w.work(ctx, execs[executing[0]]); err != nil {
			return nil, err
		}
		writes := make([]types.TransactWriteItem, 0, len(executing))
		for _, k := range executing {
			writes = append(writes, w.effectWrite(execs[k].actor.scope(), execs[k].n))
		}
		return writes, nil
	})
	for k, i := range of {
		if err != nil {
			outs[i] = outcome{class: classUnclassified, detail: "ExecuteBatch: " + err.Error()}
			continue
		}
		outs[i] = w.classify(res[k].Result, res[k].Err, answerOf(res[k].Response))
	}
	return outs
}

// httpBody is a request's body.
func (a *actor) httpBody() []byte {
	b, _ := json.Marshal(a.order())
	return b
}

// httpOutcome classifies what an HTTP client got: status, headers and
// body, with the middleware's Observe report of the request.
func httpOutcome(status int, h http.Header, body []byte, observed *hook) outcome {
	answer := httpAnswer(status, h, body)
	retryAfter := time.Second
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil {
		retryAfter = time.Duration(s) * time.Second
	}
	problem := strings.HasPrefix(h.Get("Content-Type"), idemhttp.ContentTypeProblem)
	switch {
	case status == http.StatusCreated && !problem:
		if observed != nil && errors.Is(observed.err, idem.ErrNotRecorded) {
			return outcome{class: classNotRecorded, answer: answer, detail: observed.err.Error(), fencedOut: errors.Is(observed.err, idem.ErrLeaseLost), outOfTime: errors.Is(observed.err, context.DeadlineExceeded)}
		}
		return outcome{class: classOK, answer: answer}
	case h.Get("X-Declined") != "":
		return outcome{class: classFailed, detail: "the handler answered " + strconv.Itoa(status) + ": " + h.Get("X-Declined")}
	case h.Get("X-Not-Run") != "":
		return outcome{class: classUnavailable, retryAfter: retryAfter, detail: "the handler answered " + strconv.Itoa(status) + ": " + h.Get("X-Not-Run")}
	case !problem:
	case status == http.StatusConflict:
		return outcome{class: classInFlight, retryAfter: retryAfter, detail: "409"}
	case status == http.StatusServiceUnavailable:
		return outcome{class: classUnavailable, retryAfter: retryAfter, detail: "503"}
	case status == http.StatusUnprocessableEntity:
		return outcome{class: classKeyReuse, detail: "422"}
	case status == http.StatusBadRequest || status == http.StatusForbidden:
		return outcome{class: classRefused, detail: strconv.Itoa(status)}
	}
	detail := fmt.Sprintf("HTTP %d: %s", status, short(string(body)))
	if observed != nil && observed.err != nil {
		detail += fmt.Sprintf(" (Observe: %s: %v)", observed.outcome, observed.err)
	}
	return outcome{class: classUnclassified, detail: detail}
}

// middleware is the adopter's configuration of idemhttp for c.
func middleware(c *call) *idemhttp.Middleware {
	return &idemhttp.Middleware{
		Store:     c.env.store,
		Operation: operation,
		// The adopter's own principal functions: the caller's tenant,
		// which some callers' credentials do not carry ("").
		PrincipalV2: func(rc events.APIGatewayV2HTTPRequestContext) (string, error) {
			p, _ := rc.Authorizer.Lambda["tenant"].(string)
			return p, nil
		},
		Principal: func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil },
		Observe: func(ctx context.Context, o idem.Outcome, err error) {
			if c := callOf(ctx); c != nil {
				c.mu.Lock()
				c.observed = &hook{o, err}
				c.mu.Unlock()
			}
		},
	}
}

// handle is the HTTP handler's work: the effect, then 201 with its
// reply; a failure on purpose (X-Declined), or an effect that could not
// run (X-Not-Run), is a 503 of the handler's own (not stored: the key is
// released).
func handle(ctx context.Context, w *world, c *call, a *actor) (int, http.Header, []byte) {
	h := http.Header{}
	r, err := w.outsideEffect(ctx, c, a)
	if err != nil {
		if errors.Is(err, errDeclined) {
			h.Set("X-Declined", err.Error())
		} else {
			h.Set("X-Not-Run", err.Error())
		}
		return http.StatusServiceUnavailable, h, []byte(`{"error":"try again"}`)
	}
	h.Set("Content-Type", "application/json")
	h.Set("X-Exec", strconv.Itoa(r.Exec))
	body := []byte(r.JSON())
	c.answered(a, httpAnswer(http.StatusCreated, h, body))
	return http.StatusCreated, h, body
}

func deliverAPIGatewayV2(ctx context.Context, w *world, c *call, a *actor) outcome {
	h := middleware(c).APIGatewayV2(func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		status, hdr, body := handle(ctx, w, c, a)
		out := events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: map[string]string{}, Body: string(body)}
		for k := range hdr {
			out.Headers[k] = hdr.Get(k)
		}
		return out, nil
	})
	req := events.APIGatewayV2HTTPRequest{
		RouteKey: operation, RawPath: "/orders",
		Headers: map[string]string{"idempotency-key": a.key, "content-type": "application/json"},
		Body:    string(a.httpBody()),
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: "/orders"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"tenant": a.principal()}},
		},
	}
	resp, err := h(ctx, req)
	c.mu.Lock()
	observed := c.observed
	c.mu.Unlock()
	if err != nil {
		return outcome{class: classUnclassified, detail: "the handler returned an error (API Gateway answers 500): " + err.Error()}
	}
	hdr := http.Header{}
	for k, v := range resp.Headers {
		hdr.Set(k, v)
	}
	body := []byte(resp.Body)
	return httpOutcome(resp.StatusCode, hdr, body, observed)
}

func deliverHandler(ctx context.Context, w *world, c *call, a *actor) outcome {
	h := middleware(c).Handler(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		status, hdr, body := handle(r.Context(), w, c, a)
		for k, vs := range hdr {
			rw.Header()[k] = vs
		}
		rw.WriteHeader(status)
		_, _ = rw.Write(body)
	}))
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/orders", bytes.NewReader(a.httpBody()))
	req.Header.Set("Idempotency-Key", a.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Tenant", a.principal())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	c.mu.Lock()
	observed := c.observed
	c.mu.Unlock()
	resp := rec.Result()
	return httpOutcome(resp.StatusCode, resp.Header, rec.Body.Bytes(), observed)
}

// event is an asynchronous invocation's payload.
type event struct {
	ID      string `json:"id"`
	Tenant  string `json:"tenant"`
	Caller  string `json:"caller"`
	Key     string `json:"key"`
	Variant string `json:"variant"`
}

func deliverEvent(ctx context.Context, w *world, c *call, a *actor) outcome {
	h, err := idemevent.Wrap(c.env.store, idemevent.Config[event]{
		Operation: operation,
		Key:       func(e event) (string, error) { return e.Key, nil },
		Principal: func(e event) (string, error) { return e.Tenant, nil },
		// What the event asks for, not its delivery's metadata.
		Fingerprint: func(e event) (string, error) { return idem.Fingerprint(order{Key: e.Key, Variant: e.Variant}) },
	}, func(ctx context.Context, e event) (reply, error) {
		r, err := w.outsideEffect(ctx, c, a)
		if err == nil {
			c.answered(a, r.JSON())
		}
		return r, err
	})
	if err != nil {
		panic(err)
	}
	v, err := h(ctx, event{ID: a.msgID(), Tenant: a.principal(), Caller: a.caller, Key: a.key, Variant: a.variant})
	hk, hooked := c.hookFor(a)
	switch {
	case err == nil && hooked && errors.Is(hk.err, idem.ErrNotRecorded):
		return outcome{class: classNotRecorded, answer: v.JSON(), detail: hk.err.Error(), fencedOut: errors.Is(hk.err, idem.ErrLeaseLost), outOfTime: errors.Is(hk.err, context.DeadlineExceeded)}
	case err == nil:
		return outcome{class: classOK, answer: v.JSON()}
	case errors.Is(err, idem.ErrNotRecorded):
		return outcome{class: classNotRecorded, answer: v.JSON(), unacked: true, detail: err.Error(), fencedOut: errors.Is(err, idem.ErrLeaseLost), outOfTime: errors.Is(err, context.DeadlineExceeded)}
	}
	return w.classify(idem.Result{Outcome: idem.OutcomeError}, err, "")
}

// message is a queue message's body.
type message struct {
	Tenant  string `json:"tenant"`
	Caller  string `json:"caller"`
	Key     string `json:"key"`
	Variant string `json:"variant"`
	Poison  bool   `json:"poison,omitempty"`
}

// sqsValue is what a message asks for, as idemsqs.Transact's shared
// writes need it: the effect is per caller and key.
type sqsValue struct {
	Caller  string `json:"caller"`
	Key     string `json:"key"`
	Variant string `json:"variant"`
}

var errPoison = errors.New("conformance: poison message")

func sqsEvent(as []*actor) events.SQSEvent {
	var ev events.SQSEvent
	for _, a := range as {
		b, _ := json.Marshal(message{Tenant: a.principal(), Caller: a.caller, Key: a.key, Variant: a.variant, Poison: a.poison})
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: a.msgID(), Body: string(b), EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:orders",
		})
	}
	return ev
}

func decodeMessage(m events.SQSMessage) (message, error) {
	var b message
	if err := json.Unmarshal([]byte(m.Body), &b); err != nil {
		return b, err
	}
	if b.Poison {
		return b, fmt.Errorf("%w: %s", errPoison, m.MessageId)
	}
	return b, nil
}

// sqsOutcomes classifies idemsqs's results, with the response the
// runtime gets: a message is acknowledged when it is not a batch item
// failure.
func (w *world) sqsOutcomes(as []*actor, resp events.SQSEventResponse, results []idemsqs.Result) []outcome {
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	outs := make([]outcome, len(as))
	for i, a := range as {
		r := results[i]
		if r.MessageID != a.msgID() {
			outs[i] = outcome{class: classUnclassified, detail: "result for another message: " + r.MessageID}
			continue
		}
		outs[i] = w.recordOutcome(a, r.Outcome, r.Err, !failed[a.msgID()])
	}
	return outs
}

func deliverSQSRun(ctx context.Context, w *world, c *call, as []*actor) []outcome {
	byID := map[string]*actor{}
	for _, a := range as {
		byID[a.msgID()] = a
	}
	resp, results := idemsqs.Run(ctx, c.env.store, sqsEvent(as), operation,
		func(m events.SQSMessage) (idemsqs.Entry[order], error) {
			b, err := decodeMessage(m)
			c.mu.Lock()
			c.current = byID[m.MessageId] // Run applies the messages one after another
			c.mu.Unlock()
			return idemsqs.Entry[order]{Principal: b.Tenant, Key: b.Key, Value: order{Key: b.Key, Variant: b.Variant}}, err
		},
		sequential[order](w, c))
	return w.sqsOutcomes(as, resp, results)
}

func deliverSQSTransact(ctx context.Context, w *world, c *call, as []*actor) []outcome {
	resp, results := idemsqs.Transact(ctx, c.env.store, sqsEvent(as), operation,
		func(m events.SQSMessage) (idemsqs.Entry[sqsValue], error) {
			b, err := decodeMessage(m)
			return idemsqs.Entry[sqsValue]{Principal: b.Tenant, Key: b.Key, Value: sqsValue{Caller: b.Caller, Key: b.Key, Variant: b.Variant}}, err
		},
		func(values []sqsValue, _ []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
			if w.take(&w.crashBefore) {
				c.env.crash("crash point: before the effect")
				return nil, context.Canceled
			}
			var execs []*execution
			for _, v := range values {
				i := slices.IndexFunc(as, func(a *actor) bool {
					return a.caller == v.Caller && a.key == v.Key && a.variant == v.Variant
				})
				ex := w.begin(c, as[i])
				c.answered(as[i], ack)
				execs = append(execs, ex)
			}
			if err := w.work(ctx, execs[0]); err != nil {
				return nil, err
			}
			writes := make([]types.TransactWriteItem, 0, len(values))
			for _, ex := range execs {
				writes = append(writes, w.effectWrite(ex.actor.scope(), ex.n))
			}
			return writes, nil
		})
	return w.sqsOutcomes(as, resp, results)
}

// recordOutcome classifies what became of one queue message or stream
// record, as its source saw it: acked says the answer did not ask for it
// again.
func (w *world) recordOutcome(a *actor, o idem.Outcome, err error, acked bool) outcome {
	switch {
	case err == nil && acked:
		return outcome{class: classOK, answer: ack}
	case err == nil:
		return outcome{class: classUnclassified, detail: "no error, yet the answer asks for it again"}
	case errors.Is(err, errPoison):
		return outcome{class: classRefused, detail: err.Error()}
	case errors.Is(err, idem.ErrNotRecorded):
		out := outcome{class: classNotRecorded, answer: ack, unacked: !acked, fencedOut: errors.Is(err, idem.ErrLeaseLost), outOfTime: errors.Is(err, context.DeadlineExceeded), detail: fmt.Sprintf("outcome %q: %v", o, err)}
		if o != outcomeNotRecorded {
			out.wrong = fmt.Sprintf("%s: Result.Outcome %q for an effect not recorded (intended: %q)", a.msgID(), o, outcomeNotRecorded)
		}
		return out
	case acked:
		return outcome{class: classUnclassified, detail: fmt.Sprintf("acknowledged with an error: %s: %v", o, err)}
	}
	return w.classify(idem.Result{Outcome: o}, err, "")
}

// sequential is the outside effect of a batch whose records are applied
// one after another: the record being applied is c.current.
func sequential[V any](w *world, c *call) func(context.Context, V) error {
	return func(ctx context.Context, _ V) error {
		c.mu.Lock()
		a := c.current
		c.mu.Unlock()
		_, err := w.outsideEffect(ctx, c, a)
		if err == nil {
			c.answered(a, ack)
		}
		return err
	}
}
