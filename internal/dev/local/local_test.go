package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/dev/local"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
)

const widget = `{"name":"Widget","price_cents":999,"currency":"EUR","seller_id":"3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"}`

func start(t *testing.T) *local.Runner { return startWith(t, nil) }

func startWith(t *testing.T, pub outbox.Publisher) *local.Runner {
	t.Helper()
	return startWithOut(t, pub, io.Discard)
}

// startWithOut starts a runner whose functions write their logs and
// metrics to out.
func startWithOut(t *testing.T, pub outbox.Publisher, out io.Writer) *local.Runner {
	t.Helper()
	return startConfigured(t, pub, out, func(*local.Config) {})
}

// startConfigured is startWithOut with the configuration adjusted by
// adjust before the runner starts.
func startConfigured(t *testing.T, pub outbox.Publisher, out io.Writer, adjust func(*local.Config)) *local.Runner {
	t.Helper()
	ctx := context.Background()
	cfg := local.Config{
		Publisher: pub,
		APIAddr:   "127.0.0.1:0", StoreAddr: "127.0.0.1:0",
		CreateProduct: config.CreateProduct{
			ProductsTable: "products", OutboxTable: "outbox", EventSource: "idemlambda.products",
			Idempotency:  config.Idempotency{Table: "idempotency", Retention: time.Hour},
			CallersTable: "callers", Limit: config.Limit{Creates: 1000, Window: 10 * time.Second},
		},
		Grant:      []string{"*"},
		GetProduct: config.GetProduct{ProductsTable: "products"},
		SellerStats: config.SellerStats{
			SellersTable: "sellers", EventSource: "idemlambda.products",
			Idempotency: config.Idempotency{Table: "idempotency", Retention: time.Hour, Mode: config.ModeTransact},
		},
		GetSeller:     config.GetSeller{SellersTable: "sellers"},
		ConsumeEvents: pub != nil,
		Out:           out,
		Log:           slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}
	adjust(&cfg)
	r, err := local.Start(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		// Idle client connections would hold a graceful shutdown.
		http.DefaultClient.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.NoError(t, r.Close(ctx))
	})
	return r
}

type reply struct {
	status  int
	headers http.Header
	body    string
}

func post(t *testing.T, url, key, body string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/products", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", `"`+key+`"`)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

func count(t *testing.T, r *local.Runner, table string) int {
	t.Helper()
	out, err := r.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	return len(out.Items)
}

// TestLiveServerScenario is the scenario from the article, over real HTTP:
// five concurrent POSTs with one key, a later retry, then key reuse.
func TestLiveServerScenario(t *testing.T) {
	t.Parallel()
	r := start(t)
	const concurrent = 5
	replies := make([]reply, concurrent)
	var wg sync.WaitGroup
	for i := range concurrent {
		wg.Go(func() { replies[i] = post(t, r.APIURL, "k-42", widget) })
	}
	wg.Wait()
	var first reply
	statuses := map[int]int{}
	for _, rep := range replies {
		statuses[rep.status]++
		switch rep.status {
		case http.StatusCreated:
			if first.body == "" {
				first = rep
			}
			assert.Equal(t, first.body, rep.body, "every 201 is the one product")
		case http.StatusConflict:
			assert.NotEmpty(t, rep.headers.Get("Retry-After"))
			assert.Equal(t, "application/problem+json", rep.headers.Get("Content-Type"))
		default:
			t.Errorf("unexpected status %d: %s", rep.status, rep.body)
		}
	}
	t.Logf("5 concurrent POSTs: %v", statuses)
	require.NotEmpty(t, first.body, "at least the winner answers 201")
	assert.Equal(t, 1, count(t, r, "products"))
	assert.Equal(t, 1, count(t, r, "outbox"))

	later := post(t, r.APIURL, "k-42", widget)
	assert.Equal(t, http.StatusCreated, later.status)
	assert.Equal(t, first.body, later.body, "byte for byte")
	assert.Equal(t, "true", later.headers.Get("Idempotent-Replayed"))
	assert.Equal(t, first.headers.Get("Location"), later.headers.Get("Location"))

	gadget := post(t, r.APIURL, "k-42", strings.Replace(widget, "Widget", "Gadget", 1))
	assert.Equal(t, http.StatusUnprocessableEntity, gadget.status, gadget.body)

	resp, err := http.Get(r.APIURL + first.headers.Get("Location"))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, first.body, string(b))
	assert.Equal(t, 1, count(t, r, "products"))
}

func TestUnknownRouteIsProblem404(t *testing.T) {
	t.Parallel()
	r := start(t)
	resp, err := http.Get(r.APIURL + "/nope")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
}

// flaky fails its first publish call, as EventBridge might, then relays.
type flaky struct {
	mu    sync.Mutex
	calls int
	next  outbox.Publisher
}

func (f *flaky) Publish(ctx context.Context, evs []outbox.Event) (outbox.Result, error) {
	f.mu.Lock()
	f.calls++
	first := f.calls == 1
	f.mu.Unlock()
	if first {
		return outbox.Result{}, &outbox.PublishError{Index: 0, Err: outbox.ErrCallFailed}
	}
	return f.next.Publish(ctx, evs)
}

// TestRelayFeedsEmbeddedOutboxWritesAndRetriesAFailedPublish: the local
// relay publishes one CloudEvent per product, whose data is the 201 body,
// and a failed publish is retried from the failed record.
func TestRelayFeedsEmbeddedOutboxWritesAndRetriesAFailedPublish(t *testing.T) {
	t.Parallel()
	var out logbuf.Buffer
	pub := &flaky{next: outbox.NewJSONLinesPublisher(&out)}
	r := startWith(t, pub)
	bodies := map[string]string{}
	for i := range 3 {
		rep := post(t, r.APIURL, fmt.Sprintf("relay-%d", i), strings.Replace(widget, "Widget", fmt.Sprintf("W%d", i), 1))
		require.Equal(t, http.StatusCreated, rep.status)
		var b struct{ ID string }
		require.NoError(t, json.Unmarshal([]byte(rep.body), &b))
		bodies[b.ID] = rep.body
	}
	require.Eventually(t, func() bool { return r.RelayIdle() && len(out.Lines()) == 3 }, time.Minute, 20*time.Millisecond)
	seen := map[string]bool{}
	for _, line := range out.Lines() {
		var ev outbox.Event
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		assert.Equal(t, "ProductCreated", ev.Type)
		assert.Equal(t, bodies[ev.Subject], string(ev.Data), "data is the 201 body")
		assert.False(t, seen[ev.ID], "each event once")
		seen[ev.ID] = true
	}
	pub.mu.Lock()
	defer pub.mu.Unlock()
	assert.GreaterOrEqual(t, pub.calls, 2, "the failed call was retried")
}

// TestLocalPipelineCountsSellerStatistics: make run's pipeline goes on
// past the relay: each ProductCreated reaches the seller statistics
// consumer as an SQS message, and GET /sellers/{id} on the API port shows
// the seller's numbers, each product counted once (the failed first
// publish was retried, the replays created nothing).
func TestLocalPipelineCountsSellerStatistics(t *testing.T) {
	t.Parallel()
	var out, stdout logbuf.Buffer
	r := startWithOut(t, &flaky{next: outbox.NewJSONLinesPublisher(&out)}, &stdout)
	const seller = "3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"
	resp, err := http.Get(r.APIURL + "/sellers/" + seller)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "no products yet")
	for i, price := range []string{"999", "1", "1000"} {
		body := strings.Replace(widget, `"price_cents":999`, `"price_cents":`+price, 1)
		for range 2 { // each request twice: the second is a replay
			rep := post(t, r.APIURL, fmt.Sprintf("stats-%d", i), body)
			require.Equal(t, http.StatusCreated, rep.status, rep.body)
		}
	}
	var got struct {
		SellerID     string `json:"seller_id"`
		ProductCount int    `json:"product_count"`
		Listed       []struct {
			Cents    int64  `json:"cents"`
			Currency string `json:"currency"`
		} `json:"listed"`
	}
	require.Eventually(t, func() bool {
		resp, err := http.Get(r.APIURL + "/sellers/" + seller)
		if err != nil || resp.StatusCode != http.StatusOK {
			return false
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&got) == nil && got.ProductCount == 3 && r.RelayIdle()
	}, time.Minute, 20*time.Millisecond)
	assert.Equal(t, seller, got.SellerID)
	require.Len(t, got.Listed, 1)
	assert.Equal(t, int64(2000), got.Listed[0].Cents)
	assert.Equal(t, "EUR", got.Listed[0].Currency)

	// What would reach CloudWatch: one EMF line per invocation, each
	// valid, adding up to what happened.
	sum := map[string]float64{}
	for _, l := range stdout.Metrics(t) {
		fn, _ := l["Function"].(string)
		switch fn {
		case "createproduct", "getseller":
			sum[fn+" "+l["Outcome"].(string)] += l["Requests"].(float64)
		case "outboxrelay":
			sum["published"] += l["Published"].(float64)
			sum["relay failed"] += l["Failed"].(float64)
		case "sellerstats":
			sum["applied"] += l["Applied"].(float64)
		default:
			t.Errorf("a metrics line from %q: %v", fn, l)
		}
	}
	assert.Equal(t, 3.0, sum["createproduct executed"], "%v", sum)
	assert.Equal(t, 3.0, sum["createproduct replayed"], "%v", sum)
	assert.GreaterOrEqual(t, sum["getseller served"], 2.0, "the 404 and the 200 are both served")
	assert.Equal(t, 3.0, sum["published"], "%v", sum)
	assert.GreaterOrEqual(t, sum["relay failed"], 1.0, "the flaky publisher's first failure")
	assert.Equal(t, 3.0, sum["applied"], "%v", sum)
}

// The local API's caller acts for the sellers it was granted at start,
// as a deployed stack's IAM caller does for its grant: none granted, or
// another seller, is a 403 that writes nothing.
func TestLocalCallerActsForItsGrant(t *testing.T) {
	t.Parallel()
	for name, grant := range map[string][]string{"none": nil, "another seller": {"9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a"}} {
		r := startConfigured(t, nil, io.Discard, func(c *local.Config) { c.Grant = grant })
		rep := post(t, r.APIURL, "k-"+strings.ReplaceAll(name, " ", "-"), widget)
		assert.Equal(t, http.StatusForbidden, rep.status, "%s: %s", name, rep.body)
		assert.Contains(t, rep.body, "seller-forbidden", name)
		assert.Zero(t, count(t, r, "products"), name)
	}
	r := startConfigured(t, nil, io.Discard, func(c *local.Config) {
		c.Caller = "arn:aws:sts::000000000000:assumed-role/Dev/me"
		c.Grant = []string{"3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"}
	})
	assert.Equal(t, http.StatusCreated, post(t, r.APIURL, "k-granted", widget).status, "a role's session acts for the role's grant")
}
