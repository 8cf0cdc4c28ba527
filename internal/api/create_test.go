package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idemlambda/idemlambda/internal/config"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/api"
	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/createproduct"
	"github.com/idemlambda/idemlambda/internal/dev/tables"
	"github.com/idemlambda/idemlambda/internal/outbox/outboxitem"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

func TestCreateReturns201AndReplaysByteForByte(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelDebug)
		first := f.post(t, jsonHeaders("key-201"), widget)
		require.Equal(t, 201, first.StatusCode, first.Body)
		assert.Equal(t, "application/json", first.Headers["Content-Type"])
		var body api.ProductBody
		require.NoError(t, json.Unmarshal([]byte(first.Body), &body))
		assert.Equal(t, "/products/"+body.ID, first.Headers["Location"])
		assert.Equal(t, "Widget", body.Name)
		assert.Equal(t, int64(999), body.PriceCents)
		assert.Equal(t, "EUR", body.Currency)
		assert.Equal(t, sellerID, body.SellerID)
		created, err := time.Parse(time.RFC3339, body.CreatedAt)
		require.NoError(t, err)
		assert.Equal(t, time.UTC, created.Location())
		assert.NotContains(t, first.Headers, "Idempotent-Replayed")

		// The same request again, with other field order and whitespace.
		reordered := `{ "seller_id": "` + sellerID + `", "currency": "EUR",
			"price_cents": 999, "name": "Widget" }`
		again := f.post(t, jsonHeaders(`"key-201"`), reordered)
		assert.Equal(t, 201, again.StatusCode)
		assert.Equal(t, first.Body, again.Body, "byte for byte")
		assert.Equal(t, first.Headers["Location"], again.Headers["Location"])
		assert.Equal(t, "true", again.Headers["Idempotent-Replayed"])

		assert.Equal(t, 1, f.count(t, f.env.Tables.Products))
		assert.Equal(t, 1, f.count(t, f.env.Tables.Outbox))

		// The outbox event carries the 201 body as its data.
		out, err := f.env.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(f.env.Tables.Outbox)})
		require.NoError(t, err)
		ev, err := outboxitem.Decode(out.Items[0])
		require.NoError(t, err)
		assert.Equal(t, first.Body, string(ev.Data))
		assert.Equal(t, "ProductCreated", ev.Type)
		assert.Equal(t, body.ID, ev.Subject)
		assert.Equal(t, "idemlambda.products", ev.Source)

		// GET follows the Location.
		got := f.getProduct(t, body.ID)
		assert.Equal(t, 200, got.StatusCode)
		assert.Equal(t, first.Body, got.Body)

		// Logs carry the outcome and never the key or the body.
		logs := f.logs.String()
		assert.Contains(t, logs, `"outcome":"executed"`)
		assert.Contains(t, logs, `"outcome":"replayed"`)
		assert.Contains(t, logs, `"api_request_id":"req-1"`)
		assert.NotContains(t, logs, "key-201")
		assert.NotContains(t, logs, "Widget")
	})
}

func TestCreateKeyFromBodyAndHeaderTogether(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	withKey := `{"idempotency_key":"body-key","name":"Widget","price_cents":999,"currency":"EUR","seller_id":"` + sellerID + `"}`
	first := f.post(t, jsonHeaders(""), withKey)
	require.Equal(t, 201, first.StatusCode, first.Body)
	same := f.post(t, jsonHeaders("body-key"), withKey)
	assert.Equal(t, first.Body, same.Body, "header equal to the body field is the same key")
	assert.Equal(t, "true", same.Headers["Idempotent-Replayed"])
	headerOnly := f.post(t, jsonHeaders("body-key"), widget)
	assert.Equal(t, first.Body, headerOnly.Body, "the key is not part of the fingerprint")
}

func TestCreateRejectsBadRequestsWithProblemsAndWritesNothing(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 201)
	body := func(name, price, currency, seller string) string {
		return `{"name":` + name + `,"price_cents":` + price + `,"currency":` + currency + `,"seller_id":` + seller + `}`
	}
	ok := func(s string) string { return `"` + s + `"` }
	cases := []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		kind    string
		fields  []string // fields expected in errors
	}{
		{"no key", jsonHeaders(""), widget, 400, "idempotency-key", nil},
		{"empty key header", jsonHeaders(`""`), widget, 400, "idempotency-key", nil},
		{"key with space", jsonHeaders(`"a b"`), widget, 400, "idempotency-key", nil},
		{"key too long", jsonHeaders(strings.Repeat("k", 256)), widget, 400, "idempotency-key", nil},
		{"key unterminated", jsonHeaders(`"abc`), widget, 400, "idempotency-key", nil},
		{"header and body differ", jsonHeaders("a"), `{"idempotency_key":"b","name":"Widget","price_cents":999,"currency":"EUR","seller_id":"` + sellerID + `"}`, 400, "idempotency-key", nil},
		{"body key invalid", jsonHeaders(""), `{"idempotency_key":"with space","name":"Widget","price_cents":999,"currency":"EUR","seller_id":"` + sellerID + `"}`, 400, "validation", []string{"idempotency_key"}},
		{"not json", jsonHeaders("k"), `{name:`, 400, "bad-request", nil},
		{"array", jsonHeaders("k"), `[1]`, 400, "bad-request", nil},
		{"trailing data", jsonHeaders("k"), widget + `{}`, 400, "bad-request", nil},
		{"duplicate field", jsonHeaders("k"), `{"name":"A","name":"B","price_cents":1,"currency":"EUR","seller_id":"` + sellerID + `"}`, 400, "bad-request", nil},
		{"empty body", jsonHeaders("k"), ``, 400, "bad-request", nil},
		{"price float", jsonHeaders("k"), body(ok("W"), "999.0", ok("EUR"), ok(sellerID)), 400, "validation", []string{"price_cents"}},
		{"price exponent", jsonHeaders("k"), body(ok("W"), "1e3", ok("EUR"), ok(sellerID)), 400, "validation", []string{"price_cents"}},
		{"price string", jsonHeaders("k"), body(ok("W"), `"999"`, ok("EUR"), ok(sellerID)), 400, "validation", []string{"price_cents"}},
		{"price null", jsonHeaders("k"), body(ok("W"), `null`, ok("EUR"), ok(sellerID)), 400, "validation", []string{"price_cents"}},
		{"price zero", jsonHeaders("k"), body(ok("W"), "0", ok("EUR"), ok(sellerID)), 400, "validation", []string{"price_cents"}},
		{"price negative", jsonHeaders("k"), body(ok("W"), "-5", ok("EUR"), ok(sellerID)), 400, "validation", []string{"price_cents"}},
		{"price out of range", jsonHeaders("k"), body(ok("W"), "9223372036854775808", ok("EUR"), ok(sellerID)), 400, "validation", []string{"price_cents"}},
		{"price past the bound", jsonHeaders("k"), body(ok("W"), "1000000000000", ok("EUR"), ok(sellerID)), 400, "validation", []string{"price_cents"}},
		{"price of the freeze", jsonHeaders("k"), body(ok("W"), "922337203685477580", ok("JPY"), ok(sellerID)), 400, "validation", []string{"price_cents"}},
		{"name empty", jsonHeaders("k"), body(ok("   "), "1", ok("EUR"), ok(sellerID)), 400, "validation", []string{"name"}},
		{"name too long", jsonHeaders("k"), body(ok(long), "1", ok("EUR"), ok(sellerID)), 400, "validation", []string{"name"}},
		{"name control", jsonHeaders("k"), body(`"a\u0007b"`, "1", ok("EUR"), ok(sellerID)), 400, "validation", []string{"name"}},
		{"name number", jsonHeaders("k"), body(`7`, "1", ok("EUR"), ok(sellerID)), 400, "validation", []string{"name"}},
		{"currency unknown", jsonHeaders("k"), body(ok("W"), "1", ok("XXX"), ok(sellerID)), 400, "validation", []string{"currency"}},
		{"currency lower", jsonHeaders("k"), body(ok("W"), "1", ok("eur"), ok(sellerID)), 400, "validation", []string{"currency"}},
		{"seller not uuid", jsonHeaders("k"), body(ok("W"), "1", ok("EUR"), ok("bob")), 400, "validation", []string{"seller_id"}},
		{"seller braces", jsonHeaders("k"), body(ok("W"), "1", ok("EUR"), ok("{"+sellerID+"}")), 400, "validation", []string{"seller_id"}},
		{"unknown field", jsonHeaders("k"), `{"name":"W","price_cents":1,"currency":"EUR","seller_id":"` + sellerID + `","price":1}`, 400, "validation", []string{"price"}},
		{"everything missing", jsonHeaders("k"), `{}`, 400, "validation", []string{"currency", "name", "price_cents", "seller_id"}},
		{"too large", jsonHeaders("k"), `{"name":"` + strings.Repeat("x", 16<<10) + `"}`, 413, "too-large", nil},
		{"text/plain", map[string]string{"content-type": "text/plain", "idempotency-key": "k"}, widget, 415, "unsupported-media-type", nil},
		{"no content type", map[string]string{"idempotency-key": "k"}, widget, 415, "unsupported-media-type", nil},
		{"latin1", map[string]string{"content-type": "application/json; charset=latin1", "idempotency-key": "k"}, widget, 415, "unsupported-media-type", nil},
	}
	f := newFixture(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := f.post(t, tc.headers, tc.body)
			p := assertProblem(t, resp, tc.status, tc.kind)
			var fields []string
			for _, e := range p.Errors {
				fields = append(fields, e.Field)
				assert.NotEmpty(t, e.Message)
			}
			if tc.fields != nil {
				assert.Equal(t, tc.fields, fields)
			}
			f.assertNothingWritten(t)
		})
	}
	assert.NotContains(t, f.logs.String(), sellerID, "bodies are never logged")
}

func TestCreateAcceptsCharsetAndBase64(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := postReq(map[string]string{"Content-Type": "application/json; charset=UTF-8", "Idempotency-Key": "b64"},
		base64.StdEncoding.EncodeToString([]byte(widget)))
	req.IsBase64Encoded = true
	resp, err := f.create(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, 201, resp.StatusCode, resp.Body)

	req.Body = "!!!"
	resp, err = f.create(context.Background(), req)
	require.NoError(t, err)
	assertProblem(t, resp, 400, "bad-request")

	req.Body = base64.StdEncoding.EncodeToString([]byte(strings.Repeat(" ", 16<<10+1)))
	resp, err = f.create(context.Background(), req)
	require.NoError(t, err)
	assertProblem(t, resp, 413, "too-large")
}

func TestCreateSameKeyOtherPayloadIs422(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelDebug)
		require.Equal(t, 201, f.post(t, jsonHeaders("k-422"), widget).StatusCode)
		gadget := strings.Replace(widget, "Widget", "Gadget", 1)
		p := assertProblem(t, f.post(t, jsonHeaders("k-422"), gadget), 422, "key-reuse")
		assert.Contains(t, p.Detail, "different request body")
		assert.Equal(t, 1, f.count(t, f.env.Tables.Products))
	})
}

func TestCreateInFlightIs409WithRetryAfter(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelDebug)
		// A first request holds the key: reserve it as the handler would.
		cmd, err := product.NewCreateCommand(product.CreateInput{Name: "Widget", PriceCents: 999, Currency: "EUR", SellerID: sellerID})
		require.NoError(t, err)
		fp, err := api.Fingerprint(cmd)
		require.NoError(t, err)
		store, err := idem.NewStore(f.env.Client, f.env.Tables.Idempotency)
		require.NoError(t, err)
		scope, err := idem.NewScope(api.OperationCreateProduct, testCaller, "k-409")
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		held, release := make(chan struct{}), make(chan struct{})
		go func() {
			_, _ = store.Run(ctx, scope, fp, func(context.Context) (idem.Response, error) {
				close(held)
				<-release
				return idem.Response{Status: 201}, nil
			})
		}()
		<-held
		defer close(release)

		resp := f.post(t, jsonHeaders("k-409"), widget)
		assertProblem(t, resp, 409, "in-flight")
		assert.Regexp(t, `^(1[0-3]|[1-9])$`, resp.Headers["Retry-After"], "whole seconds, rounded up, until the holder's lease has ended (deadline 10s + 2s margin, +1ms to be past it): at most 13")
		assert.Zero(t, f.count(t, f.env.Tables.Products))
	})
}

func TestCreateUnavailableStoreIs503(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelDebug)
		if f.env.Store == nil {
			t.Skipf("failure injection needs the embedded backend; %s has none", f.env.Kind)
		}
		for _, op := range []idemtest.Op{idemtest.OpPutItem, idemtest.OpTransactWriteItems, idemtest.OpGetItem} {
			f.env.Store.Inject(op, idemtest.ServerError, 100)
		}
		resp := f.post(t, jsonHeaders("k-503"), widget)
		f.env.Store.ClearFaults()
		assertProblem(t, resp, 503, "unavailable")
		assert.Equal(t, "1", resp.Headers["Retry-After"])
		f.assertNothingWritten(t)
		assert.Contains(t, f.logs.String(), `"level":"ERROR"`)

		// The key was never taken: the retry creates the product.
		assert.Equal(t, 201, f.post(t, jsonHeaders("k-503"), widget).StatusCode)
	})
}

func TestCreateUnexpectedFailureIs500AndReleasesTheKey(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelDebug)
		c := createConfig(f.env.Tables, mode)
		c.ProductsTable = "no-such-table"
		broken, err := createproduct.New(f.env.Client, c, app.Runtime{Out: f.logs})
		require.NoError(t, err)
		resp, err := broken(context.Background(), postReq(jsonHeaders("k-500"), widget))
		require.NoError(t, err)
		p := assertProblem(t, resp, 500, "internal")
		assert.NotContains(t, p.Detail, "no-such-table", "no internal detail to the client")
		assert.Contains(t, f.logs.String(), "ResourceNotFoundException", "the log has it")
		f.assertNothingWritten(t)
		// Its metrics line: Outcome=released (the key is free), and a
		// fault, which the Faults alarm sees whatever the outcome.
		lines := f.logs.Metrics(t)
		require.Len(t, lines, 1)
		assert.Equal(t, "released", lines[0]["Outcome"])
		assert.EqualValues(t, 1, lines[0]["Faults"])

		// Released: the fixed handler runs the same key at once.
		assert.Equal(t, 201, f.post(t, jsonHeaders("k-500"), widget).StatusCode)
	})
}

func TestCreateScopesKeysByPrincipal(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	as := func(sub, name string) events.APIGatewayV2HTTPResponse {
		req := postReq(jsonHeaders("shared-key"), strings.Replace(widget, "Widget", name, 1))
		req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": sub, "iss": "https://issuer", "seller_ids": sellerID}},
		}
		resp, err := f.create(context.Background(), req)
		require.NoError(t, err)
		return resp
	}
	assert.Equal(t, 201, as("alice", "Widget").StatusCode)
	assert.Equal(t, 201, as("bob", "Gadget").StatusCode, "another caller's key is another record")
	assert.Equal(t, 422, as("alice", "Gadget").StatusCode)
	assert.Equal(t, 2, f.count(t, f.env.Tables.Products))
}

func TestCreateWrongMethodIs405(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := postReq(jsonHeaders("k"), widget)
	req.RequestContext.HTTP.Method = "PUT"
	resp, err := f.create(context.Background(), req)
	require.NoError(t, err)
	assertProblem(t, resp, 405, "method-not-allowed")
	assert.Equal(t, "POST", resp.Headers["Allow"])
}

func TestConcurrentDuplicatePostsCreateOneProduct(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelDebug)
		const callers = 16
		statuses := make(chan int, callers)
		bodies := make(chan string, callers)
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				resp := f.post(t, jsonHeaders("dup"), widget)
				statuses <- resp.StatusCode
				if resp.StatusCode == 201 {
					bodies <- resp.Body
				}
			})
		}
		wg.Wait()
		close(statuses)
		close(bodies)
		counts := map[int]int{}
		for s := range statuses {
			counts[s]++
		}
		t.Logf("mode=%s statuses: %v", mode, counts)
		// In both modes a duplicate that meets the first request's
		// running commit is in flight (409); one that comes after it
		// replays the 201.
		assert.Equal(t, callers, counts[201]+counts[409], "only 201 and 409")
		first := ""
		for b := range bodies {
			if first == "" {
				first = b
			}
			assert.Equal(t, first, b, "every 201 is the same product")
		}
		assert.Equal(t, 1, f.count(t, f.env.Tables.Products))
		assert.Equal(t, 1, f.count(t, f.env.Tables.Outbox))
	})
}

func TestGetStatuses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	assertProblem(t, f.getProduct(t, uuid.NewString()), 404, "not-found")
	assertProblem(t, f.getProduct(t, "not-a-uuid"), 400, "bad-request")
	assertProblem(t, f.getProduct(t, "urn:uuid:"+sellerID), 400, "bad-request")
	assertProblem(t, f.getProduct(t, ""), 400, "bad-request")
}

func TestCreateRejectsInvalidUTF8(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	resp := f.post(t, jsonHeaders("k-utf8"), strings.Replace(widget, "Widget", "Wid\xff\xfeget", 1))
	p := assertProblem(t, resp, 400, "bad-request")
	assert.Contains(t, p.Detail, "UTF-8")
	f.assertNothingWritten(t)
}

func TestCreatePrincipalFromJWTWithoutSub(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	as := func(claims map[string]string, name string) events.APIGatewayV2HTTPResponse {
		req := postReq(jsonHeaders("m2m-key"), strings.Replace(widget, "Widget", name, 1))
		req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
		}
		resp, err := f.create(context.Background(), req)
		require.NoError(t, err)
		return resp
	}
	assert.Equal(t, 201, as(map[string]string{"iss": "i", "client_id": "svc-a", "seller_ids": "*"}, "A").StatusCode)
	assert.Equal(t, 201, as(map[string]string{"iss": "i", "client_id": "svc-b", "seller_ids": "*"}, "B").StatusCode, "another client, another scope")
	assert.Equal(t, 422, as(map[string]string{"iss": "i", "client_id": "svc-a", "seller_ids": "*"}, "B").StatusCode)
	p := assertProblem(t, as(map[string]string{"iss": "i"}, "C"), 403, "forbidden")
	assert.Contains(t, p.Detail, "names no caller")
	assert.Equal(t, 2, f.count(t, f.env.Tables.Products))
}

// A request that reaches createproduct without an authorizer (a route
// that lost its IAM or JWT authorizer) is refused with a 403 problem,
// in both modes: never served in one anonymous scope that every caller
// would share, replaying each other's products and using up each
// other's keys. Nothing is written, and its retry is refused too.
func TestCreateRefusesAnUnauthenticatedRequest(t *testing.T) {
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelDebug)
		for name, authorizer := range map[string]*events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			"no authorizer":    nil,
			"empty authorizer": {},
		} {
			req := postReq(jsonHeaders("anon-key"), widget)
			req.RequestContext.Authorizer = authorizer
			for range 2 {
				resp, err := f.create(context.Background(), req)
				require.NoError(t, err)
				p := assertProblem(t, resp, 403, "forbidden")
				assert.Contains(t, p.Detail, "names no caller", name)
			}
		}
		f.assertNothingWritten(t)
		assert.Contains(t, f.logs.String(), `"outcome":"rejected"`)
	})
}

// TestCreateHungStoreIs503BeforeTheDeadline: a store that never answers
// ends in a problem+json 503 a margin before Lambda's deadline, not in a
// timeout API Gateway would turn into an opaque error. In fake time
// (testing/synctest), with a DynamoDB client whose every call waits for
// its context to end: when the answer comes is the handler's own
// deadline arithmetic, whatever the machine's load.
func TestCreateHungStoreIs503BeforeTheDeadline(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		synctest.Test(t, func(t *testing.T) {
			hung := &hungStore{}
			client, err := app.Client(config.AWS{Region: "us-east-1", AccessKeyID: "local", SecretAccessKey: "local", Endpoint: "http://hung.invalid"},
				nil, dynamodb.NewFromConfig, func(o *dynamodb.Options) { o.HTTPClient = hung })
			require.NoError(t, err)
			logs := &logbuf.Buffer{}
			h, err := createproduct.New(client, createConfig(tables.Names{Products: "p", Idempotency: "i", Outbox: "o", Callers: "c"}, mode), app.Runtime{Out: logs})
			require.NoError(t, err)
			const invocation = 3 * time.Second
			ctx, cancel := context.WithTimeout(context.Background(), invocation)
			defer cancel()
			start := time.Now()
			resp, err := h(ctx, postReq(jsonHeaders("k-hung"), widget))
			require.NoError(t, err)
			took := time.Since(start)
			assertProblem(t, resp, 503, "unavailable")
			assert.Equal(t, "1", resp.Headers["Retry-After"])
			// The work stops a margin before the deadline, and the
			// detached release or read-back gets half the margin: the
			// answer comes at most half a margin before the deadline,
			// and no sooner than the work's own end.
			t.Logf("answered %v after the start of a %v invocation; %d calls to the store", took, invocation, hung.calls.Load())
			assert.GreaterOrEqual(t, took, invocation-api.DeadlineMargin, "the work had until its own deadline")
			assert.LessOrEqual(t, took, invocation-api.DeadlineMargin/2, "answered inside the invocation, with half a margin to spare")
			assert.NoError(t, ctx.Err(), "the invocation's deadline has not passed")
			assert.Positive(t, hung.calls.Load(), "the store was called")
			assert.Contains(t, logs.String(), `"outcome":"unavailable"`)
		})
	})
}

// hungStore is an HTTP client whose every request waits until its
// context ends, as a store that never answers: inside a synctest bubble
// the wait is durably blocked, so fake time moves on to the next timer.
type hungStore struct{ calls atomic.Int32 }

func (h *hungStore) Do(r *http.Request) (*http.Response, error) {
	h.calls.Add(1)
	<-r.Context().Done()
	return nil, r.Context().Err()
}
