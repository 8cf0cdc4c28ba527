package idemstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemstream"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// A Kinesis consumer whose effect is outside DynamoDB (a shipment): the
// order's id is the key, the producing service the principal. The shard's
// batch is applied in order; the record that does not decode stops it,
// and the answer names its sequence number, from which Lambda retries the
// shard. The record after it is left untried, and the one before it,
// delivered twice, ships once. In a Lambda function:
//
//	lambda.Start(func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
//		resp, _ := orders.Run(ctx, ev, ship)
//		return resp, nil
//	})
func ExampleKinesis_Run() {
	server := idemtest.Start() // stands in for DynamoDB
	defer server.Close()
	db := server.Client()
	if err := idemtable.Create(context.Background(), db, "idempotency", idemtable.Layout{}); err != nil {
		log.Fatal(err)
	}
	store, err := idem.NewStore(db, "idempotency")
	if err != nil {
		log.Fatal(err)
	}

	type order struct {
		Item string `json:"item"`
	}
	decodeOrder := func(r events.KinesisEventRecord) (idemstream.Entry[order], error) {
		var ev struct {
			ID     string `json:"id"`
			Source string `json:"source"`
			Data   order  `json:"data"`
		}
		if err := json.Unmarshal(r.Kinesis.Data, &ev); err != nil {
			return idemstream.Entry[order]{}, fmt.Errorf("poison: %w", err)
		}
		return idemstream.Entry[order]{Principal: ev.Source, Key: ev.ID, Value: ev.Data}, nil
	}
	ship := func(ctx context.Context, o order) error {
		fmt.Println("shipping", o.Item)
		return nil
	}

	record := func(seq, data string) events.KinesisEventRecord {
		return events.KinesisEventRecord{Kinesis: events.KinesisRecord{SequenceNumber: seq, Data: []byte(data)}}
	}
	body := `{"id":"order-7","source":"shop","data":{"item":"teapot"}}`
	ev := events.KinesisEvent{Records: []events.KinesisEventRecord{
		record("101", body),
		record("102", body), // the producer put it twice
		record("103", "{"),
		record("104", `{"id":"order-8","source":"shop","data":{"item":"cups"}}`),
	}}
	orders, err := idemstream.NewKinesis(store, "ship", decodeOrder)
	if err != nil {
		log.Fatal(err)
	}
	resp, results := orders.Run(context.Background(), ev, ship)
	for _, r := range results {
		fmt.Println(r.SequenceNumber, r.Outcome, errors.Is(r.Err, idemstream.ErrSkipped))
	}
	fmt.Println("retry from:", resp.BatchItemFailures)
	// Output:
	// shipping teapot
	// 101 executed false
	// 102 replayed false
	// 103 rejected false
	// 104 rejected true
	// retry from: [{103}]
}
