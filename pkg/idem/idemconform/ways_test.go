package idemconform_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemconform"
	"github.com/idemlambda/idemlambda/pkg/idem/idemevent"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemsqs"
)

// The library's own ways in, each driven as its adopters drive it, through
// idemconform's public interface alone.

// operation is the operation every way's scopes are for.
const operation = "POST /orders"

var ways = []idemconform.Way{
	{Name: "Execute", Source: idemconform.Requests, Effect: idemconform.Writes, ClaimFirst: true, Deadline: idemconform.DeadlineEither, Deliver: one(deliverExecute(false))},
	{Name: "Transact", Source: idemconform.Requests, Effect: idemconform.Writes, Deliver: one(deliverExecute(true))},
	{Name: "Run", Source: idemconform.Requests, Deadline: idemconform.DeadlineEither, Deliver: one(deliverRun)},
	{Name: "Do", Source: idemconform.Requests, Deadline: idemconform.DeadlineEither, Deliver: one(deliverDo)},
	{Name: "ExecuteBatch", Source: idemconform.Queue, Effect: idemconform.Writes, Deliver: deliverExecuteBatch},
	{Name: "idemhttp.APIGatewayV2", Source: idemconform.Requests, Deliver: one(deliverAPIGatewayV2)},
	{Name: "idemhttp.APIGatewayV1", Source: idemconform.Requests, Deliver: one(deliverAPIGatewayV1)},
	{Name: "idemhttp.ALB", Source: idemconform.Requests, Deliver: one(deliverALB)},
	{Name: "idemhttp.Handler", Source: idemconform.Requests, Deadline: idemconform.DeadlineNone, Deliver: one(deliverHandler)},
	{Name: "idemevent", Source: idemconform.Async, Deliver: one(deliverEvent)},
	{Name: "idemsqs.Run", Source: idemconform.Queue, Deliver: deliverSQSRun},
	{Name: "idemsqs.Transact", Source: idemconform.Queue, Effect: idemconform.Writes, Deliver: deliverSQSTransact},
}

// one is a way that delivers one request an invocation.
func one(deliver func(context.Context, *idemconform.Invocation, *idemconform.Request) idemconform.Answer) func(context.Context, *idemconform.Invocation) []idemconform.Answer {
	return func(ctx context.Context, inv *idemconform.Invocation) []idemconform.Answer {
		return []idemconform.Answer{deliver(ctx, inv, inv.Requests()[0])}
	}
}

// scopeOf is the scope an adopter's code builds for r: idem.NewScope
// with its principal function's answer.
func scopeOf(r *idemconform.Request) (idem.Scope, error) {
	return idem.NewScope(operation, r.Principal(), r.Key())
}

func fingerprint(p idemconform.Payload) string {
	fp, err := idem.Fingerprint(p)
	if err != nil {
		panic(err) // a struct of two strings
	}
	return fp
}

func deliverExecute(transact bool) func(context.Context, *idemconform.Invocation, *idemconform.Request) idemconform.Answer {
	return func(ctx context.Context, inv *idemconform.Invocation, r *idemconform.Request) idemconform.Answer {
		sc, err := scopeOf(r)
		if err != nil {
			return idemconform.FromCall(idem.OutcomeRejected, err, "")
		}
		fn := func(ctx context.Context) (idem.Effect, error) {
			reply, writes, err := inv.Writes(ctx, r)
			if err != nil {
				return idem.Effect{}, err
			}
			return idem.Effect{Response: reply.Response(), Writes: writes}, nil
		}
		var res idem.Result
		if transact {
			res, err = inv.Store().Transact(ctx, sc, fingerprint(r.Payload()), fn)
		} else {
			res, err = inv.Store().Execute(ctx, sc, fingerprint(r.Payload()), fn)
		}
		return idemconform.FromCall(res.Outcome, err, idemconform.ResponseAnswer(res.Response))
	}
}

func deliverRun(ctx context.Context, inv *idemconform.Invocation, r *idemconform.Request) idemconform.Answer {
	sc, err := scopeOf(r)
	if err != nil {
		return idemconform.FromCall(idem.OutcomeRejected, err, "")
	}
	res, err := inv.Store().Run(ctx, sc, fingerprint(r.Payload()), func(ctx context.Context) (idem.Response, error) {
		reply, err := inv.Effect(ctx, r)
		if err != nil {
			return idem.Response{}, err
		}
		return reply.Response(), nil
	})
	return idemconform.FromCall(res.Outcome, err, idemconform.ResponseAnswer(res.Response))
}

func deliverDo(ctx context.Context, inv *idemconform.Invocation, r *idemconform.Request) idemconform.Answer {
	sc, err := scopeOf(r)
	if err != nil {
		return idemconform.FromCall(idem.OutcomeRejected, err, "")
	}
	v, o, err := idem.Do(ctx, inv.Store(), sc, fingerprint(r.Payload()), func(ctx context.Context) (idemconform.Reply, error) {
		return inv.Effect(ctx, r)
	})
	return idemconform.FromCall(o, err, v.JSON())
}

// deliverExecuteBatch hands a queue's batch to ExecuteBatch: each message
// an item, answered with an execution's reply, and the shared writes the
// executing items' effects.
func deliverExecuteBatch(ctx context.Context, inv *idemconform.Invocation) []idemconform.Answer {
	reqs := inv.Requests()
	answers := make([]idemconform.Answer, len(reqs))
	var items []idem.BatchItem
	var of []int
	var execs []*idemconform.Execution
	for i, r := range reqs {
		if _, err := idemconform.ParseMessage(r.Body()); err != nil {
			answers[i] = idemconform.FromCall(idem.OutcomeRejected, err, "")
			continue
		}
		sc, err := scopeOf(r)
		if err != nil {
			answers[i] = idemconform.FromCall(idem.OutcomeRejected, err, "")
			continue
		}
		ex := inv.Begin(r)
		execs = append(execs, ex)
		items = append(items, idem.BatchItem{Scope: sc, Fingerprint: fingerprint(r.Payload()), Response: ex.Reply().Response()})
		of = append(of, i)
	}
	if len(items) == 0 {
		return answers
	}
	res, err := inv.Store().ExecuteBatch(ctx, items, func(executing []int, _ []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
		exs := make([]*idemconform.Execution, len(executing))
		for k, i := range executing {
			exs[k] = execs[i]
		}
		return inv.BatchWrites(ctx, exs)
	})
	for k, i := range of {
		if err != nil {
			answers[i] = idemconform.Answer{Class: idemconform.Unclassified, Detail: "ExecuteBatch: " + err.Error()}
			continue
		}
		answers[i] = idemconform.FromCall(res[k].Outcome, res[k].Err, idemconform.ResponseAnswer(res[k].Response))
	}
	return answers
}

// middleware is the adopter's configuration of idemhttp: the caller's
// tenant, which some callers' credentials do not carry ("").
func middleware(inv *idemconform.Invocation) (*idemhttp.Middleware, error) {
	return idemhttp.New(inv.Store(),
		idemhttp.WithOperation(operation),
		idemhttp.WithPrincipalV2(func(rc events.APIGatewayV2HTTPRequestContext) (string, error) {
			p, _ := rc.Authorizer.Lambda["tenant"].(string)
			return p, nil
		}),
		idemhttp.WithPrincipalV1(func(rc events.APIGatewayProxyRequestContext) (string, error) {
			p, _ := rc.Authorizer["principalId"].(string)
			return p, nil
		}),
		idemhttp.WithPrincipalALB(func(req events.ALBTargetGroupRequest) (string, error) {
			if vs := req.MultiValueHeaders["x-tenant"]; len(vs) == 1 {
				return vs[0], nil
			}
			return "", nil
		}),
		idemhttp.WithPrincipal(func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil }),
	)
}

// headers flattens a Lambda response's headers, single and multi-value.
func headers(single map[string]string, multi map[string][]string) http.Header {
	h := http.Header{}
	for k, v := range single {
		h.Set(k, v)
	}
	for k, vs := range multi {
		h.Del(k)
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	return h
}

// flat is a handler's headers as a Lambda response's map.
func flat(h http.Header) map[string]string {
	out := map[string]string{}
	for k := range h {
		out[k] = h.Get(k)
	}
	return out
}

func deliverAPIGatewayV2(ctx context.Context, inv *idemconform.Invocation, r *idemconform.Request) idemconform.Answer {
	mw, err := middleware(inv)
	if err != nil {
		return unclassified("idemhttp.New: " + err.Error())
	}
	h := mw.APIGatewayV2(func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		status, hdr, body := inv.Handle(ctx, r)
		return events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: flat(hdr), Body: string(body)}, nil
	})
	body, _ := json.Marshal(r.Payload())
	resp, err := h(ctx, events.APIGatewayV2HTTPRequest{
		RouteKey: operation, RawPath: "/orders",
		Headers: map[string]string{"idempotency-key": r.Key(), "content-type": "application/json"},
		Body:    string(body),
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: "/orders"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"tenant": r.Principal()}},
		},
	})
	if err != nil {
		return unclassified("the handler returned an error (API Gateway answers 500): " + err.Error())
	}
	return idemconform.FromHTTP(resp.StatusCode, headers(resp.Headers, resp.MultiValueHeaders), []byte(resp.Body))
}

// deliverAPIGatewayV1 is a REST API's request (payload 1.0) whose Lambda
// authorizer names the tenant.
func deliverAPIGatewayV1(ctx context.Context, inv *idemconform.Invocation, r *idemconform.Request) idemconform.Answer {
	mw, err := middleware(inv)
	if err != nil {
		return unclassified("idemhttp.New: " + err.Error())
	}
	h := mw.APIGatewayV1(func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		status, hdr, body := inv.Handle(ctx, r)
		return events.APIGatewayProxyResponse{StatusCode: status, MultiValueHeaders: hdr, Body: string(body)}, nil
	})
	body, _ := json.Marshal(r.Payload())
	hdr := map[string]string{"Idempotency-Key": r.Key(), "Content-Type": "application/json"}
	resp, err := h(ctx, events.APIGatewayProxyRequest{
		Resource: "/orders", Path: "/orders", HTTPMethod: http.MethodPost,
		Headers: hdr, MultiValueHeaders: multi(hdr), Body: string(body),
		RequestContext: events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"principalId": r.Principal()}},
	})
	if err != nil {
		return unclassified("the handler returned an error (API Gateway answers 502): " + err.Error())
	}
	return idemconform.FromHTTP(resp.StatusCode, headers(resp.Headers, resp.MultiValueHeaders), []byte(resp.Body))
}

// deliverALB is a load balancer's request, its target group in
// multi-value headers mode, the tenant in a header the adopter's
// principal function trusts.
func deliverALB(ctx context.Context, inv *idemconform.Invocation, r *idemconform.Request) idemconform.Answer {
	mw, err := middleware(inv)
	if err != nil {
		return unclassified("idemhttp.New: " + err.Error())
	}
	h := mw.ALB(func(ctx context.Context, req events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
		status, hdr, body := inv.Handle(ctx, r)
		return events.ALBTargetGroupResponse{StatusCode: status, MultiValueHeaders: hdr, Body: string(body)}, nil
	})
	body, _ := json.Marshal(r.Payload())
	resp, err := h(ctx, events.ALBTargetGroupRequest{
		HTTPMethod: http.MethodPost, Path: "/orders", Body: string(body),
		MultiValueHeaders: multi(map[string]string{"idempotency-key": r.Key(), "content-type": "application/json", "x-tenant": r.Principal()}),
	})
	if err != nil {
		return unclassified("the handler returned an error (the load balancer answers 502): " + err.Error())
	}
	if len(resp.Headers) > 0 {
		return unclassified("a multi-value mode request answered with single-value headers")
	}
	return idemconform.FromHTTP(resp.StatusCode, headers(nil, resp.MultiValueHeaders), []byte(resp.Body))
}

// multi is a header map as a multi-value one.
func multi(h map[string]string) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, v := range h {
		out[k] = []string{v}
	}
	return out
}

func unclassified(detail string) idemconform.Answer {
	return idemconform.Answer{Class: idemconform.Unclassified, Detail: detail}
}

func deliverHandler(ctx context.Context, inv *idemconform.Invocation, r *idemconform.Request) idemconform.Answer {
	mw, err := middleware(inv)
	if err != nil {
		return unclassified("idemhttp.New: " + err.Error())
	}
	h := mw.Handler(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		status, hdr, body := inv.Handle(req.Context(), r)
		for k, vs := range hdr {
			rw.Header()[k] = vs
		}
		rw.WriteHeader(status)
		_, _ = rw.Write(body)
	}))
	body, _ := json.Marshal(r.Payload())
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/orders", bytes.NewReader(body))
	req.Header.Set("Idempotency-Key", r.Key())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Tenant", r.Principal())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	return idemconform.FromHTTP(resp.StatusCode, resp.Header, rec.Body.Bytes())
}

// event is an asynchronous invocation's payload.
type event struct {
	ID string `json:"id"`
	idemconform.Message
}

func deliverEvent(ctx context.Context, inv *idemconform.Invocation, r *idemconform.Request) idemconform.Answer {
	h, err := idemevent.Wrap(inv.Store(), operation, func(e event) (idemevent.Entry, error) {
		// What the event asks for, not its delivery's metadata.
		return idemevent.Entry{Principal: e.Principal, Key: e.Key, Value: e.Payload()}, nil
	}, func(ctx context.Context, _ event) (idemconform.Reply, error) {
		return inv.Effect(ctx, r)
	})
	if err != nil {
		return unclassified("idemevent.Wrap: " + err.Error())
	}
	v, err := h(ctx, event{ID: r.ID(), Message: r.Message()})
	answer := idemconform.FromCall("", err, v.JSON())
	answer.Redeliver = err != nil // an error goes back to Lambda, which invokes again
	return answer
}

// sqsEvent is the batch as an SQS event.
func sqsEvent(reqs []*idemconform.Request) events.SQSEvent {
	var ev events.SQSEvent
	for _, r := range reqs {
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: r.ID(), Body: string(r.Body()), EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:orders",
		})
	}
	return ev
}

// sqsAnswers reads idemsqs's results with the response the runtime gets:
// a message is acknowledged when it is not a batch item failure.
func sqsAnswers(reqs []*idemconform.Request, resp events.SQSEventResponse, results []idemsqs.Result) []idemconform.Answer {
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	answers := make([]idemconform.Answer, len(reqs))
	for i, r := range reqs {
		if results[i].MessageID != r.ID() {
			answers[i] = unclassified("result for another message: " + results[i].MessageID)
			continue
		}
		answers[i] = idemconform.FromRecord(results[i].Outcome, results[i].Err, !failed[r.ID()])
	}
	return answers
}

// sequential is the Outside effect of a batch whose records are applied
// one after another: the record being applied is the one its decoder
// read last.
type sequential struct {
	inv     *idemconform.Invocation
	current *idemconform.Request
}

func (s *sequential) decode(id string, body []byte) (idemconform.Message, error) {
	for _, r := range s.inv.Requests() {
		if r.ID() == id {
			s.current = r
		}
	}
	return idemconform.ParseMessage(body)
}

func (s *sequential) effect(ctx context.Context, _ idemconform.Payload) error {
	_, err := s.inv.Effect(ctx, s.current)
	return err
}

func deliverSQSRun(ctx context.Context, inv *idemconform.Invocation) []idemconform.Answer {
	seq := &sequential{inv: inv}
	consumer, err := idemsqs.New(inv.Store(), operation, func(m events.SQSMessage) (idemsqs.Entry[idemconform.Payload], error) {
		msg, err := seq.decode(m.MessageId, []byte(m.Body))
		return idemsqs.Entry[idemconform.Payload]{Principal: msg.Principal, Key: msg.Key, Value: msg.Payload()}, err
	})
	if err != nil {
		return []idemconform.Answer{unclassified("idemsqs.New: " + err.Error())}
	}
	resp, results := consumer.Run(ctx, sqsEvent(inv.Requests()), seq.effect)
	return sqsAnswers(inv.Requests(), resp, results)
}

// value is what a message asks for, as Consumer.Transact's shared writes
// need it: the effect is per caller and key.
type value struct {
	Caller  string `json:"caller"`
	Key     string `json:"key"`
	Variant string `json:"variant"`
}

func valueOf(m idemconform.Message) value {
	return value{Caller: m.Caller, Key: m.Key, Variant: m.Variant}
}

func (v value) message() idemconform.Message {
	return idemconform.Message{Caller: v.Caller, Key: v.Key, Variant: v.Variant}
}

func deliverSQSTransact(ctx context.Context, inv *idemconform.Invocation) []idemconform.Answer {
	consumer, err := idemsqs.New(inv.Store(), operation, func(m events.SQSMessage) (idemsqs.Entry[value], error) {
		msg, err := idemconform.ParseMessage([]byte(m.Body))
		return idemsqs.Entry[value]{Principal: msg.Principal, Key: msg.Key, Value: valueOf(msg)}, err
	})
	if err != nil {
		return []idemconform.Answer{unclassified("idemsqs.New: " + err.Error())}
	}
	resp, results := consumer.Transact(ctx, sqsEvent(inv.Requests()),
		func(values []value, _ []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
			exs := make([]*idemconform.Execution, len(values))
			for i, v := range values {
				exs[i] = inv.Begin(inv.Lookup(v.message()))
			}
			return inv.BatchWrites(ctx, exs)
		})

	return sqsAnswers(inv.Requests(), resp, results)
}
