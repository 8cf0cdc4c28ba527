package idemhttp_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// localStore stands in for idem.NewStore(dynamodb.NewFromConfig(cfg),
// os.Getenv("IDEMPOTENCY_TABLE")): an embedded DynamoDB-compatible server
// with the table created, so the examples run anywhere.
func localStore() (*idem.Store, func()) {
	local := idemtest.Start()
	client, stop := local.Client(), local.Close
	if err := idemtable.Create(context.Background(), client, "idempotency", idemtable.Layout{}); err != nil {
		log.Fatal(err)
	}
	store, err := idem.NewStore(client, "idempotency")
	if err != nil {
		log.Fatal(err)
	}
	return store, stop
}

// An aws-lambda-go handler made idempotent; in a Lambda main:
// lambda.Start(mw.APIGatewayV2(sendEmail)).
func ExampleMiddleware_APIGatewayV2() {
	store, stop := localStore()
	defer stop()
	sent := 0
	sendEmail := func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		sent++ // the effect: a call to the mail provider
		return events.APIGatewayV2HTTPResponse{StatusCode: 202, Body: fmt.Sprintf(`{"message":%d}`, sent)}, nil
	}
	// The route's JWT authorizer names the caller (PrincipalV2), so two
	// callers never share a key.
	mw, err := idemhttp.New(store)
	if err != nil {
		log.Fatal(err)
	}
	handler := mw.APIGatewayV2(sendEmail)

	req := events.APIGatewayV2HTTPRequest{
		RouteKey: "POST /emails", RawPath: "/emails",
		Headers: map[string]string{"idempotency-key": `"mail-1"`, "content-type": "application/json"},
		Body:    `{"to":"ada@example.com"}`,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{
					Claims: map[string]string{"iss": "https://auth.example.com/", "sub": "ada"},
				},
			},
		},
	}
	for range 2 {
		resp, _ := handler(context.Background(), req)
		fmt.Printf("%d %s replayed=%q\n", resp.StatusCode, resp.Body, resp.Headers[idemhttp.HeaderReplayed])
	}
	fmt.Println("e-mails sent:", sent)
	// Output:
	// 202 {"message":1} replayed=""
	// 202 {"message":1} replayed="true"
	// e-mails sent: 1
}

// A net/http handler made idempotent, with callers told apart by a header
// (use the authenticated user in a real server).
func ExampleMiddleware_Handler() {
	store, stop := localStore()
	defer stop()
	mw, err := idemhttp.New(store,
		idemhttp.WithPrincipal(func(r *http.Request) (string, error) { return "user:" + r.Header.Get("X-User"), nil }),
		// Problem types point at your API's documentation.
		idemhttp.WithProblemTypeBase("https://api.example.com/problems#"),
	)
	if err != nil {
		log.Fatal(err)
	}
	charges := 0
	mux := http.NewServeMux()
	mux.Handle("POST /charges", mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		charges++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":"ch_%d"}`, charges)
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	post := func(key, body string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/charges", strings.NewReader(body))
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("X-User", "ada")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Printf("%d replayed=%q %s\n", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), b)
	}
	post(`"charge-1"`, `{"cents":500}`)
	post(`"charge-1"`, `{ "cents": 500 }`) // the same JSON, spaced differently: a retry
	post(`"charge-1"`, `{"cents":900}`)    // another payload with the same key
	fmt.Println("charges:", charges)
	// Output:
	// 201 replayed="" {"charge":"ch_1"}
	// 201 replayed="true" {"charge":"ch_1"}
	// 422 replayed="" {"type":"https://api.example.com/problems#key-reuse","title":"Idempotency key reused with a different payload","status":422,"detail":"this idempotency key was used with a different request body; use a new key for a new request"}
	// charges: 1
}

// A handler whose effect is DynamoDB writes calls idem.Store.Execute (or
// Transact) itself, so that its writes commit with the key's completion:
// ScopeV2 before, for the key, the caller and the scope; FromAPIGatewayV2
// for the response it stores; AnswerV2 after, for the replay or the
// problem.
func ExampleMiddleware_ScopeV2() {
	store, stop := localStore()
	defer stop()
	mw, err := idemhttp.New(store, idemhttp.WithOperation("POST /orders"))
	if err != nil {
		log.Fatal(err)
	}
	orders := 0
	handler := func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		scope, err := mw.ScopeV2(req, "")
		if err != nil {
			return mw.AnswerV2(idem.Result{}, err), nil
		}
		fp, err := idem.Fingerprint(req.Body)
		if err != nil {
			return mw.AnswerV2(idem.Result{}, err), nil
		}
		res, err := store.Execute(ctx, scope, fp, func(ctx context.Context) (idem.Effect, error) {
			orders++ // with the order's DynamoDB writes in Effect.Writes
			resp, err := idemhttp.FromAPIGatewayV2(events.APIGatewayV2HTTPResponse{StatusCode: 201, Body: fmt.Sprintf(`{"order":%d}`, orders)})
			return idem.Effect{Response: resp}, err
		})
		return mw.AnswerV2(res, err), nil
	}
	req := events.APIGatewayV2HTTPRequest{
		Headers: map[string]string{"idempotency-key": `"order-1"`}, Body: `{"item":"teapot"}`,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"principalId": "shop-7"}},
		},
	}
	for range 2 {
		resp, _ := handler(context.Background(), req)
		fmt.Printf("%d %s replayed=%q\n", resp.StatusCode, resp.Body, resp.Headers[idemhttp.HeaderReplayed])
	}
	delete(req.Headers, "idempotency-key")
	resp, _ := handler(context.Background(), req)
	fmt.Println(resp.StatusCode, "without a key; orders:", orders)
	// Output:
	// 201 {"order":1} replayed=""
	// 201 {"order":1} replayed="true"
	// 400 without a key; orders: 1
}

// A handler that calls idem.Store.Execute itself uses ProblemFor for its
// errors, with its API's problem type base (or "" for about:blank).
func ExampleProblemFor() {
	const types = "https://api.example.com/problems#"
	p := idemhttp.ProblemFor(fmt.Errorf("create order: %w", &idem.InFlightError{RetryAfter: 4200 * time.Millisecond}), types)
	resp := p.APIGatewayV2()
	fmt.Println(resp.StatusCode, resp.Headers["Retry-After"], resp.Headers["Content-Type"], p.Type)
	fmt.Println(idemhttp.ProblemFor(idem.ErrKeyReuse, types).Status)
	fmt.Println(idemhttp.ProblemFor(context.DeadlineExceeded, "").Type)
	// Output:
	// 409 5 application/problem+json https://api.example.com/problems#in-flight
	// 422
	// about:blank
}

func ExampleParseKey() {
	for _, v := range []string{`"order-42"`, `order-42`, `"a\"b";v=1`, `"two words"`} {
		key, err := idemhttp.ParseKey(v)
		fmt.Printf("%q %v\n", key, err != nil)
	}
	// Output:
	// "order-42" false
	// "order-42" false
	// "a\"b" false
	// "" true
}
