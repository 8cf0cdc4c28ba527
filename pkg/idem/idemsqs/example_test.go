package idemsqs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemsqs"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// An SQS consumer whose effect is outside DynamoDB (an e-mail): the
// event's id is the key, its source the principal. The second delivery of
// the same event is acknowledged without sending again; a message that
// does not decode is reported, so the queue redelivers it and then
// dead-letters it. In a Lambda function:
//
//	lambda.Start(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
//		resp, _ := consumer.Run(ctx, ev, sendWelcome)
//		return resp, nil
//	})
func ExampleConsumer_Run() {
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

	type signup struct {
		Email string `json:"email"`
	}
	decodeSignup := func(m events.SQSMessage) (idemsqs.Entry[signup], error) {
		var ev struct {
			ID     string `json:"id"`
			Source string `json:"source"`
			Data   signup `json:"data"`
		}
		if err := json.Unmarshal([]byte(m.Body), &ev); err != nil {
			return idemsqs.Entry[signup]{}, fmt.Errorf("poison: %w", err)
		}
		return idemsqs.Entry[signup]{Principal: ev.Source, Key: ev.ID, Value: ev.Data}, nil
	}
	sendWelcome := func(ctx context.Context, s signup) error {
		fmt.Println("sending to", s.Email)
		return nil
	}

	consumer, err := idemsqs.New(store, "send welcome", decodeSignup, idemsqs.WithRetention(7*24*time.Hour))
	if err != nil {
		log.Fatal(err)
	}

	body := `{"id":"evt-1","source":"accounts","data":{"email":"ada@example.com"}}`
	ev := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: body},
		{MessageId: "m2", Body: body}, // the producer sent it twice
		{MessageId: "m3", Body: "{"},
	}}
	resp, results := consumer.Run(context.Background(), ev, sendWelcome)
	for _, r := range results {
		fmt.Println(r.MessageID, r.Outcome)
	}
	fmt.Println("failed:", resp.BatchItemFailures)
	// Output:
	// sending to ada@example.com
	// m1 executed
	// m2 replayed
	// m3 rejected
	// failed: [{m3}]
}
