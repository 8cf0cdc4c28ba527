package sellers_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/dev/eventbus"
	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/pkg/money"
)

func TestDecodeMessageReadsWhatTheRelayPublishes(t *testing.T) {
	t.Parallel()
	seller := uuid.New()
	c := newProduct(t, seller, eur(t, 1999))
	got, err := sellers.DecodeMessage(c.message(t, 1).Body)
	require.NoError(t, err)
	assert.Equal(t, c.event.ID, got.EventID)
	assert.Equal(t, source, got.Source)
	assert.Equal(t, seller, got.Product.SellerID())
	assert.Equal(t, eur(t, 1999), got.Product.Price())
	assert.Equal(t, c.event.Subject, got.Product.ID().String())

	// A member the consumer does not use may be added by the producer.
	withExtra, err := eventbus.Envelope(source, "ProductCreated", append(mustJSON(t, c.event)[:len(mustJSON(t, c.event))-1], []byte(`,"traceparent":"00-x"}`)...), c.event.Time)
	require.NoError(t, err)
	_, err = sellers.DecodeMessage(string(withExtra))
	require.NoError(t, err)
}

func mustJSON(t testing.TB, e any) []byte {
	t.Helper()
	b, err := jsonMarshal(e)
	require.NoError(t, err)
	return b
}

// FuzzDecodeMessage: any body decodes to an event whose product passes
// every rule (a positive price in a supported currency, UUIDs), or fails
// with ErrPoison; never a panic, never another error.
func FuzzDecodeMessage(f *testing.F) {
	seller := uuid.MustParse("3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b")
	c := newProduct(f, seller, eur(f, 999))
	good := c.message(f, 1).Body
	f.Add(good)
	f.Add(`{"detail-type":"ProductCreated","source":"s","detail":{}}`)
	f.Add(`{"detail-type":"ProductCreated","source":"s","detail":[]}`)
	f.Add(`{}`)
	f.Add(`null`)
	f.Add(good[:len(good)/2])
	f.Fuzz(func(t *testing.T, body string) {
		ev, err := sellers.DecodeMessage(body)
		if err != nil {
			if !errors.Is(err, sellers.ErrPoison) {
				t.Fatalf("error %v does not wrap ErrPoison", err)
			}
			return
		}
		p := ev.Product
		if ev.EventID == "" || ev.Source == "" || !p.Price().IsValid() || p.Price().IsZero() || p.SellerID() == uuid.Nil || p.ID() == uuid.Nil {
			t.Fatalf("accepted an event that breaks the rules: %+v", ev)
		}
		if _, err := money.ParseCurrency(string(p.Price().Currency())); err != nil {
			t.Fatalf("accepted currency %q", p.Price().Currency())
		}
	})
}

// BenchmarkConsumer is the handler's cost per record, batches of 10 fresh
// events, against the backend of DYNAMODB_TEST_BACKEND (make bench: a
// store in another process).
func BenchmarkConsumer(b *testing.B) {
	f := newFixture(b)
	seller := uuid.New()
	var batch []events.SQSMessage
	records := 0
	b.ReportAllocs()
	for b.Loop() {
		batch = batch[:0]
		for range 10 {
			batch = append(batch, newProduct(b, seller, eur(b, 100)).message(b, 1))
		}
		resp, err := f.consumer.Handle(context.Background(), events.SQSEvent{Records: batch})
		if err != nil || len(resp.BatchItemFailures) != 0 {
			b.Fatalf("batch failed: %v %v", err, resp.BatchItemFailures)
		}
		records += len(batch)
	}
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(f.env.Counter.Total())/float64(records), "ddb-calls/record")
	got, err := f.reader.Get(context.Background(), seller)
	if err != nil || got.ProductCount != int64(records) {
		b.Fatal(fmt.Errorf("count %d of %d: %v", got.ProductCount, records, err))
	}
}
