package idemevent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemevent"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// localStore stands in for idem.NewStore(dynamodb.NewFromConfig(cfg),
// table): an embedded DynamoDB-compatible server with an idempotency
// table, so the examples run anywhere.
func localStore() (*idem.Store, func()) {
	server := idemtest.Start()
	if err := idemtable.Create(context.Background(), server.Client(), "idempotency", idemtable.Layout{}); err != nil {
		log.Fatal(err)
	}
	store, err := idem.NewStore(server.Client(), "idempotency")
	if err != nil {
		log.Fatal(err)
	}
	return store, server.Close
}

type orderPlaced struct {
	OrderID string `json:"order_id"`
	Cents   int    `json:"cents"`
}

type invoice struct {
	Number string `json:"number"`
	Cents  int    `json:"cents"`
}

// An EventBridge rule's target: the key is the order id in the event's
// detail, which a producer's PutEvents retry carries again under a new
// event id and time, so the entry's Value (the fingerprint) is the
// detail, not the whole event. The principal is the event's source.
func ExampleWrap_eventBridge() {
	store, stop := localStore()
	defer stop()
	issued := 0
	read := func(e events.EventBridgeEvent) (idemevent.Entry, error) {
		var d orderPlaced
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			return idemevent.Entry{}, err
		}
		if d.OrderID == "" {
			return idemevent.Entry{}, fmt.Errorf("%w: detail.order_id", idemevent.ErrNoKey)
		}
		return idemevent.Entry{Principal: e.Source, Key: d.OrderID, Value: e.Detail}, nil
	}
	handler, err := idemevent.Wrap(store, "invoices.issue", read, func(ctx context.Context, e events.EventBridgeEvent) (invoice, error) {
		var d orderPlaced
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			return invoice{}, err
		}
		issued++ // the effect: an invoice issued through an outside API
		return invoice{Number: fmt.Sprintf("INV-%d", issued), Cents: d.Cents}, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// In the function's main: lambda.Start(handler)

	ctx := context.Background()
	placed := events.EventBridgeEvent{
		ID: "ev-1", Source: "com.example.orders", DetailType: "OrderPlaced",
		Time:   time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
		Detail: json.RawMessage(`{"order_id":"o-1","cents":1999}`),
	}
	resent := placed // the producer's PutEvents retry: a new id and time
	resent.ID, resent.Time = "ev-2", placed.Time.Add(time.Second)
	for _, e := range []events.EventBridgeEvent{placed, placed, resent} {
		inv, err := handler(ctx, e)
		fmt.Println(e.ID, inv.Number, inv.Cents, err)
	}
	// Another order under the same id is a producer's bug: key reuse.
	other := placed
	other.Detail = json.RawMessage(`{"order_id":"o-1","cents":5}`)
	_, err = handler(ctx, other)
	fmt.Println(errors.Is(err, idem.ErrKeyReuse))
	fmt.Println("invoices issued:", issued)
	// Output:
	// ev-1 INV-1 1999 <nil>
	// ev-1 INV-1 1999 <nil>
	// ev-2 INV-1 1999 <nil>
	// true
	// invoices issued: 1
}

// refundRequest is what a direct invocation (lambda:Invoke from another
// service) sends: a plain struct with a request id of its own.
type refundRequest struct {
	RequestID string `json:"request_id"`
	OrderID   string `json:"order_id"`
	Cents     int    `json:"cents"`
}

type refund struct {
	RefundID string `json:"refund_id"`
}

// A direct invocation: the caller's request id is the key; the principal
// is fixed, the one service the function's resource policy lets invoke
// it, said explicitly. A request without an id fails (ErrNoKey) rather
// than run unprotected.
func ExampleWrap_directInvocation() {
	store, stop := localStore()
	defer stop()
	refunds := 0
	read := func(r refundRequest) (idemevent.Entry, error) {
		return idemevent.Entry{Principal: "billing-service", Key: r.RequestID}, nil // no id: ErrNoKey
	}
	handler, err := idemevent.Wrap(store, "refunds.create", read, func(ctx context.Context, r refundRequest) (refund, error) {
		scope, _ := idem.ScopeFrom(ctx) // pass scope.Key to the payment API, if it takes one
		refunds++
		return refund{RefundID: "rf_" + scope.Key}, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	req := refundRequest{RequestID: "req-9", OrderID: "o-7", Cents: 500}
	for range 2 { // the caller retries after a timeout
		r, err := handler(ctx, req)
		fmt.Println(r.RefundID, err)
	}
	_, err = handler(ctx, refundRequest{OrderID: "o-8", Cents: 100})
	fmt.Println(errors.Is(err, idemevent.ErrNoKey))
	fmt.Println("refunds made:", refunds)
	// Output:
	// rf_req-9 <nil>
	// rf_req-9 <nil>
	// true
	// refunds made: 1
}

// taskInput is a Step Functions task's payload, with the execution's
// context passed in by the state's Parameters:
//
//	"Payload": {
//	  "state_machine.$": "$$.StateMachine.Id",
//	  "execution.$":     "$$.Execution.Name",
//	  "state.$":         "$$.State.Name",
//	  "order_id.$":      "$.order_id"
//	}
type taskInput struct {
	StateMachine string `json:"state_machine"`
	Execution    string `json:"execution"`
	State        string `json:"state"`
	OrderID      string `json:"order_id"`
}

type reservation struct {
	ReservationID string `json:"reservation_id"`
}

// A Step Functions task: the key is scoped to the execution and the state
// (add $$.Map.Item.Index inside a Map), so the task's Retry replays while
// another execution runs afresh; the principal is the state machine. Give
// the task a Retry on "InFlightError" too: a duplicate that meets a
// running invocation gets that error.
func ExampleWrap_stepFunctions() {
	store, stop := localStore()
	defer stop()
	reserved := 0
	read := func(in taskInput) (idemevent.Entry, error) {
		if in.Execution == "" || in.State == "" {
			return idemevent.Entry{}, fmt.Errorf("%w: execution and state", idemevent.ErrNoKey)
		}
		return idemevent.Entry{Principal: in.StateMachine, Key: in.Execution + "/" + in.State}, nil
	}
	handler, err := idemevent.Wrap(store, "stock.reserve", read, func(ctx context.Context, in taskInput) (reservation, error) {
		reserved++
		return reservation{ReservationID: fmt.Sprintf("res-%d", reserved)}, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	in := taskInput{
		StateMachine: "arn:aws:states:eu-west-1:123456789012:stateMachine:orders",
		Execution:    "order-o-1", State: "ReserveStock", OrderID: "o-1",
	}
	first, err := handler(ctx, in)
	fmt.Println(first.ReservationID, err)
	retried, err := handler(ctx, in) // the task's Retry after a Lambda.ServiceException
	fmt.Println(retried.ReservationID, err)
	in.Execution = "order-o-1-redo" // a new execution of the same order runs again
	again, err := handler(ctx, in)
	fmt.Println(again.ReservationID, err)
	// Output:
	// res-1 <nil>
	// res-1 <nil>
	// res-2 <nil>
}
