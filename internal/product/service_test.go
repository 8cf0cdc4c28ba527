package product_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/outbox/outboxitem"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/internal/tracing"
)

func TestConstructorsRejectMissingWiring(t *testing.T) {
	t.Parallel()
	_, err := product.NewService(product.Config{})
	assert.ErrorContains(t, err, "table names are required")
	_, err = product.NewService(product.Config{ProductsTable: "p"})
	assert.ErrorContains(t, err, "outbox table")
	_, err = product.NewService(product.Config{ProductsTable: "p", OutboxTable: "o"})
	assert.ErrorContains(t, err, "event source")
	_, err = product.NewService(product.Config{ProductsTable: "p", OutboxTable: "o", EventSource: "s"})
	assert.NoError(t, err)
	_, err = product.NewReader(nil, "p")
	assert.Error(t, err)
}

// Create writes nothing: it returns the product, and the product item and
// its event as one transaction's writes, the event's data the contract a
// consumer decodes back into the same product. The item records the
// product's creator, the command's caller; the event does not carry it.
// A command no caller made creates nothing.
func TestCreateReturnsTheWritesItImplies(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	svc, err := product.NewService(product.Config{ProductsTable: "p", OutboxTable: "o", EventSource: "s", Now: func() time.Time { return at }})
	require.NoError(t, err)
	cmd, err := product.NewCreateCommand(product.CreateInput{Name: "Widget", PriceCents: 999, Currency: "EUR", SellerID: "3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"})
	require.NoError(t, err)
	_, err = svc.Create(context.Background(), cmd)
	require.ErrorContains(t, err, "needs its creator")
	const creator = "iam:arn:aws:iam::123456789012:user/alice"
	c, err := svc.Create(context.Background(), cmd.By(creator))
	require.NoError(t, err)
	assert.Equal(t, at, c.Product.CreatedAt())
	assert.Equal(t, creator, c.Product.CreatedBy())
	require.Len(t, c.Writes, 2)
	assert.Equal(t, "p", *c.Writes[0].Put.TableName)
	assert.Equal(t, "o", *c.Writes[1].Put.TableName)
	assert.Equal(t, &types.AttributeValueMemberS{Value: creator}, c.Writes[0].Put.Item["created_by"])
	stored, err := product.FromItem(c.Writes[0].Put.Item)
	require.NoError(t, err)
	assert.Equal(t, c.Product, stored, "the item reads back, creator included")

	ev, err := outboxitem.Decode(c.Writes[1].Put.Item)
	require.NoError(t, err)
	assert.Equal(t, product.EventCreated, ev.Type)
	back, err := product.DecodeCreatedData(ev.Data)
	require.NoError(t, err)
	assert.Equal(t, c.Product.CreatedData(), back.CreatedData())
	assert.NotContains(t, string(ev.Data), "alice", "the event's data names no caller")
	assert.Empty(t, back.CreatedBy())
}

// The event carries the trace context Create runs under, so a consumer
// can link its work to the request that created the product; with none,
// it carries none.
func TestCreateCarriesTheTraceContext(t *testing.T) {
	t.Parallel()
	svc, err := product.NewService(product.Config{ProductsTable: "p", OutboxTable: "o", EventSource: "s"})
	require.NoError(t, err)
	cmd, err := product.NewCreateCommand(product.CreateInput{Name: "Widget", PriceCents: 999, Currency: "EUR", SellerID: "3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"})
	require.NoError(t, err)
	const tp = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"
	for ctx, want := range map[context.Context]string{
		tracing.Extract(context.Background(), tp, "k=v"): tp,
		context.Background():                             "",
	} {
		c, err := svc.Create(ctx, cmd.By("iam:arn:aws:iam::123456789012:user/alice"))
		require.NoError(t, err)
		ev, err := outboxitem.Decode(c.Writes[1].Put.Item)
		require.NoError(t, err)
		assert.Equal(t, want, ev.TraceParent)
		if want != "" {
			assert.Equal(t, "k=v", ev.TraceState)
		}
	}
}

// The outbox item names the Region Origin gives for the context Create
// runs in, so only that Region's relay publishes it; without Origin it
// names none.
func TestCreateStampsTheOrigin(t *testing.T) {
	t.Parallel()
	type regionKey struct{}
	origin := func(ctx context.Context) string { r, _ := ctx.Value(regionKey{}).(string); return r }
	cmd, err := product.NewCreateCommand(product.CreateInput{Name: "Widget", PriceCents: 999, Currency: "EUR", SellerID: "3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"})
	require.NoError(t, err)
	for _, tc := range []struct {
		origin func(context.Context) string
		ctx    context.Context
		want   string
	}{
		{origin, context.WithValue(context.Background(), regionKey{}, "eu-west-1"), "eu-west-1"},
		{origin, context.WithValue(context.Background(), regionKey{}, "us-west-2"), "us-west-2"},
		{nil, context.WithValue(context.Background(), regionKey{}, "us-west-2"), ""},
	} {
		svc, err := product.NewService(product.Config{ProductsTable: "p", OutboxTable: "o", EventSource: "s", Origin: tc.origin})
		require.NoError(t, err)
		c, err := svc.Create(tc.ctx, cmd.By("iam:arn:aws:iam::123456789012:user/alice"))
		require.NoError(t, err)
		ev, err := outboxitem.Decode(c.Writes[1].Put.Item)
		require.NoError(t, err)
		assert.Equal(t, tc.want, ev.Origin)
	}
}

func TestDecodeCreatedDataIsStrict(t *testing.T) {
	t.Parallel()
	good := `{"id":"0193a1f0-0000-7000-8000-000000000001","name":"Widget","price_cents":999,"currency":"EUR",` +
		`"seller_id":"3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b","created_at":"2026-12-01T10:00:00.000Z"}`
	p, err := product.DecodeCreatedData([]byte(good))
	require.NoError(t, err)
	assert.Equal(t, good, string(must(json.Marshal(p.CreatedData()))), "the data round-trips byte for byte")
	for name, bad := range map[string]string{
		"missing member":   `{"id":"0193a1f0-0000-7000-8000-000000000001","name":"Widget","price_cents":999,"currency":"EUR","seller_id":"3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"}`,
		"float price":      strings.Replace(good, `999`, `999.0`, 1),
		"string price":     strings.Replace(good, `999`, `"999"`, 1),
		"member case":      strings.Replace(good, `"price_cents"`, `"PRICE_CENTS"`, 1),
		"duplicate":        strings.Replace(good, `"name":"Widget"`, `"name":"Widget","name":"Gadget"`, 1),
		"braced id":        strings.Replace(good, `"0193a1f0-0000-7000-8000-000000000001"`, `"{0193a1f0-0000-7000-8000-000000000001}"`, 1),
		"zero price":       strings.Replace(good, `999`, `0`, 1),
		"unknown currency": strings.Replace(good, `"EUR"`, `"BTC"`, 1),
	} {
		_, err := product.DecodeCreatedData([]byte(bad))
		assert.Error(t, err, name)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
