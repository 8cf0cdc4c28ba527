package sellers_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/dev/eventbus"
	"github.com/idemlambda/idemlambda/internal/outbox/bridge"
	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/internal/testkit/outboxtest"
	"github.com/idemlambda/idemlambda/pkg/money"
)

func TestDecodeMessageReadsWhatTheRelayPublishes(t *testing.T) {
	t.Parallel()
	seller := uuid.New()
	c := newProduct(t, seller, eur(t, 1999))
	// The entry the relay's own publisher sends, wrapped as EventBridge
	// delivers it to the queue.
	pub, err := bridge.New(&outboxtest.Bus{}, bridge.Config{Bus: "b", Source: source})
	require.NoError(t, err)
	entry, _, err := pub.Entry(c.event)
	require.NoError(t, err)
	body, err := eventbus.Envelope(aws.ToString(entry.Source), aws.ToString(entry.DetailType), []byte(aws.ToString(entry.Detail)), c.event.Time)
	require.NoError(t, err)
	got, err := sellers.DecodeMessage(string(body))
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

// The CloudEvent's Distributed Tracing attributes come out as they were
// published; one of another JSON type, or in another case, costs the
// trace, never the count.
func TestDecodeMessageReadsTheTraceContext(t *testing.T) {
	t.Parallel()
	c := newProduct(t, uuid.New(), eur(t, 100))
	c.event.TraceParent, c.event.TraceState = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01", "k=v"
	body := c.body(t)
	require.Contains(t, body, `"traceparent":"00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"`)
	got, err := sellers.DecodeMessage(body)
	require.NoError(t, err)
	assert.Equal(t, c.event.TraceParent, got.TraceParent)
	assert.Equal(t, "k=v", got.TraceState)

	for name, b := range map[string]string{
		"a number": strings.Replace(body, `"traceparent":"00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"`, `"traceparent":7`, 1),
		"an array": strings.Replace(body, `"tracestate":"k=v"`, `"tracestate":["k=v"]`, 1),
		"capitals": strings.Replace(body, `"traceparent"`, `"TraceParent"`, 1),
	} {
		require.NotEqual(t, body, b, name)
		got, err := sellers.DecodeMessage(b)
		require.NoError(t, err, name)
		assert.Equal(t, c.event.ID, got.EventID, name)
	}
}

// encoding/json alone matches member names in any case and keeps the
// last of two; a wrong price could be counted that way.
func TestDecodeMessageRefusesAmbiguousMembers(t *testing.T) {
	t.Parallel()
	c := newProduct(t, uuid.New(), eur(t, 100))
	good := c.body(t)
	require.Contains(t, good, `"price_cents":100`)
	upper := uuid.NewString()
	for name, body := range map[string]string{
		"data member in another case":     strings.Replace(good, `"price_cents":100`, `"PRICE_CENTS":100`, 1),
		"duplicate data member":           strings.Replace(good, `"price_cents":100`, `"price_cents":100,"price_cents":999999`, 1),
		"duplicate CloudEvent member":     strings.Replace(good, `"type":"ProductCreated"`, `"type":"ProductCreated","type":"ProductCreated"`, 1),
		"envelope member in another case": strings.Replace(good, `"detail-type"`, `"Detail-Type"`, 1),
		"CloudEvent id in upper case":     strings.Replace(good, c.event.ID, strings.ToUpper(c.event.ID), 1),
		"CloudEvent id not a UUID":        strings.Replace(good, `"id":"`+c.event.ID+`"`, `"id":"evt-1"`, 1),
		"CloudEvent id in braces":         strings.Replace(good, c.event.ID, "{"+upper+"}", 1),
	} {
		require.NotEqual(t, good, body, name)
		_, err := sellers.DecodeMessage(body)
		assert.ErrorIs(t, err, sellers.ErrPoison, name)
	}
	_, err := sellers.DecodeMessage(good)
	require.NoError(t, err)
}

// FuzzDecodeMessage: any body decodes to an event whose product passes
// every rule (a positive price in a supported currency, UUIDs), or fails
// with ErrPoison; never a panic, never another error.
func FuzzDecodeMessage(f *testing.F) {
	seller := uuid.MustParse("3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b")
	c := newProduct(f, seller, eur(f, 999))
	good := c.body(f)
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
