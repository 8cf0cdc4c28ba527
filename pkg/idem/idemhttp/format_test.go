package idemhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// formatOne is a completed record exactly as the library wrote it before
// format 2 (no format attribute; response_status, response_headers,
// response_body), for scope and fingerprint.
func formatOne(scope idem.Scope, fingerprint string, status int, headers map[string]string, body types.AttributeValue) map[string]types.AttributeValue {
	now := time.Now()
	item := map[string]types.AttributeValue{
		"id":               &types.AttributeValueMemberS{Value: scope.ID()},
		"status":           &types.AttributeValueMemberS{Value: "COMPLETED"},
		"fingerprint":      &types.AttributeValueMemberS{Value: fingerprint},
		"lease_token":      &types.AttributeValueMemberS{Value: "0b0e5a84-6a4a-4b4e-9a55-0d4c2c1f8a10"},
		"lease_expires_at": &types.AttributeValueMemberN{Value: "1796201903108"},
		"completion_id":    &types.AttributeValueMemberS{Value: "8f7d3c2e-1b0a-4f9e-8d7c-6b5a4f3e2d1c"},
		"response_status":  &types.AttributeValueMemberN{Value: itoa(status)},
		"response_body":    body,
		"created_at":       &types.AttributeValueMemberS{Value: now.UTC().Format(time.RFC3339Nano)},
		"completed_at":     &types.AttributeValueMemberS{Value: now.UTC().Format(time.RFC3339Nano)},
		"expires_at":       &types.AttributeValueMemberN{Value: itoa(int(now.Add(time.Hour).Unix()))},
	}
	if len(headers) > 0 {
		m := map[string]types.AttributeValue{}
		for k, v := range headers {
			m[k] = &types.AttributeValueMemberS{Value: v}
		}
		item["response_headers"] = &types.AttributeValueMemberM{Value: m}
	}
	return item
}

func itoa(n int) string { return strconv.Itoa(n) }

// newTable is a strict store with an idempotency table of the default
// layout, and a store on it.
func newTable(t *testing.T) (*dynamodb.Client, *idem.Store) {
	t.Helper()
	db := idemtest.New(t).Client()
	must.NoError(t, idemtable.Create(context.Background(), db, "idempotency", idemtable.Layout{}))
	store, err := idem.NewStore(db, "idempotency")
	must.NoError(t, err)
	return db, store
}

// Records written before format 2 replay byte for byte: through
// Execute and ToAPIGatewayV2 (createproduct's way), through the
// middleware on both paths, a stand-in stored without its body, a binary
// body, and a value Do stored.
func TestRecordsOfFormatOneReplayByteForByte(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, store := newTable(t)
	put := func(item map[string]types.AttributeValue) {
		t.Helper()
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("idempotency"), Item: item})
		must.NoError(t, err)
	}
	ran := func(context.Context) (idem.Effect, error) {
		t.Error("a completed key ran again")
		return idem.Effect{}, nil
	}

	// A 201 with a cookie pair, as createproduct and the middleware stored it.
	sc, _ := idem.NewAnonymousScope("POST /products", "k-old")
	put(formatOne(sc, "fp", 201, map[string]string{
		"Content-Type": "application/json", "Location": "/products/1", "Set-Cookie": "a=1; Path=/\nb=2",
	}, &types.AttributeValueMemberS{Value: `{"id":"1"}`}))
	for _, call := range []func(context.Context, idem.Scope, string, func(context.Context) (idem.Effect, error), ...idem.CallOption) (idem.Result, error){store.Execute, store.Transact} {
		// (Transact computes its effect before its claim: it never lands.)
		res, err := call(ctx, sc, "fp", func(context.Context) (idem.Effect, error) {
			return idem.Effect{Response: idem.Response{Body: []byte("again")}}, nil
		})
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeReplayed, res.Outcome)
		check.Equal(t, events.APIGatewayV2HTTPResponse{
			StatusCode: 201,
			Headers:    map[string]string{"Content-Type": "application/json", "Location": "/products/1", idemhttp.HeaderReplayed: "true"},
			Cookies:    []string{"a=1; Path=/", "b=2"},
			Body:       `{"id":"1"}`,
		}, idemhttp.ToAPIGatewayV2(res.Response, true))
	}

	// A response the middleware stored without its body: the status, the
	// marker, and none of the headers that describe a body.
	// (Fingerprinting no header, the middleware's fingerprint is
	// RequestFingerprint's.)
	mw := mustNew(t, store, idemhttp.WithAnonymous(), idemhttp.WithFingerprintHeaders())
	req := emailRequest(`"k-big"`, `{"to":"ada@example.com"}`)
	sc, _ = idem.NewAnonymousScope("POST /emails", "k-big")
	fp := idemhttp.RequestFingerprint("POST", "/emails", "", []byte(req.Body))
	put(formatOne(sc, fp, 202, map[string]string{
		"Content-Type": "text/plain", "X-Mail": "m-1", idemhttp.HeaderBodyOmitted: "too large",
	}, &types.AttributeValueMemberS{Value: ""}))
	out, err := mw.APIGatewayV2(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		t.Error("a completed key ran again")
		return events.APIGatewayV2HTTPResponse{}, nil
	})(ctx, req)
	must.NoError(t, err)
	check.Equal(t, events.APIGatewayV2HTTPResponse{
		StatusCode: 202,
		Headers:    map[string]string{"X-Mail": "m-1", idemhttp.HeaderBodyOmitted: "too large", idemhttp.HeaderReplayed: "true"},
		Body:       "",
	}, out)

	// The same record on net/http.
	hreq := httptest.NewRequest(http.MethodPost, "/emails", strings.NewReader(req.Body))
	hreq.Header.Set(idemhttp.HeaderKey, `"k-big"`)
	hreq.Header.Set("Content-Type", "application/json")
	hmw := mustNew(t, store, idemhttp.WithAnonymous(), idemhttp.WithOperation("POST /emails"), idemhttp.WithFingerprintHeaders())
	rec := httptest.NewRecorder()
	hmw.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("a completed key ran again") })).ServeHTTP(rec, hreq)
	check.Equal(t, 202, rec.Code)
	check.Equal(t, http.Header{"X-Mail": {"m-1"}, idemhttp.HeaderBodyOmitted: {"too large"}, idemhttp.HeaderReplayed: {"true"}}, rec.Header())
	check.Equal(t, "", rec.Body.String())

	// A body that is not UTF-8, stored as binary.
	sc, _ = idem.NewAnonymousScope("POST /images", "k-bin")
	put(formatOne(sc, "fp", 200, map[string]string{"Content-Type": "image/png"}, &types.AttributeValueMemberB{Value: []byte{0x89, 'P', 0xff, 0x00}}))
	res, err := store.Execute(ctx, sc, "fp", ran)
	must.NoError(t, err)
	check.Equal(t, events.APIGatewayV2HTTPResponse{
		StatusCode: 200, Headers: map[string]string{"Content-Type": "image/png"},
		Body: "iVD/AA==", IsBase64Encoded: true,
	}, idemhttp.ToAPIGatewayV2(res.Response, false))

	// A value Do stored: a 200 with its JSON.
	sc, _ = idem.NewScope("charge", "shop", "k-do")
	put(formatOne(sc, "fp", 200, map[string]string{"Content-Type": "application/json"}, &types.AttributeValueMemberS{Value: `{"id":"ch_1","cents":1998}`}))
	type charge struct {
		ID    string `json:"id"`
		Cents int    `json:"cents"`
	}
	v, outcome, err := idem.Do(ctx, store, sc, "fp", func(context.Context) (charge, error) {
		t.Error("a completed key ran again")
		return charge{}, nil
	})
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeReplayed, outcome)
	check.Equal(t, charge{ID: "ch_1", Cents: 1998}, v)
}

// Records of format 2 written before Response had a Status (the status
// in the metadata entry ":status", an omitted body's reason in
// ":omitted") replay byte for byte, and the library writes the same
// attributes for the same response today: the format did not change.
func TestRecordsOfFormatTwoKeepTheirBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, store := newTable(t)
	meta := &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		":status":      &types.AttributeValueMemberS{Value: "201"},
		"Content-Type": &types.AttributeValueMemberS{Value: "application/json"},
		"Set-Cookie":   &types.AttributeValueMemberS{Value: "a=1; Path=/\nb=2"},
	}}
	old := func(sc idem.Scope, fp string, meta types.AttributeValue, body string) map[string]types.AttributeValue {
		item := formatOne(sc, fp, 0, nil, &types.AttributeValueMemberS{Value: body})
		delete(item, "response_status")
		item["format"] = &types.AttributeValueMemberN{Value: "2"}
		item["writes"] = &types.AttributeValueMemberN{Value: "0"}
		item["response_meta"] = meta
		return item
	}
	sc, _ := idem.NewAnonymousScope("POST /products", "k-two")
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("idempotency"), Item: old(sc, "fp", meta, `{"id":"2"}`)})
	must.NoError(t, err)
	res, err := store.Execute(ctx, sc, "fp", func(context.Context) (idem.Effect, error) {
		t.Error("a completed key ran again")
		return idem.Effect{}, nil
	})
	must.NoError(t, err)
	check.Equal(t, idem.Response{Status: 201, Meta: map[string]string{"Content-Type": "application/json", "Set-Cookie": "a=1; Path=/\nb=2"}, Body: []byte(`{"id":"2"}`)}, res.Response)
	check.Equal(t, events.APIGatewayV2HTTPResponse{
		StatusCode: 201,
		Headers:    map[string]string{"Content-Type": "application/json", idemhttp.HeaderReplayed: "true"},
		Cookies:    []string{"a=1; Path=/", "b=2"},
		Body:       `{"id":"2"}`,
	}, idemhttp.ToAPIGatewayV2(res.Response, true))

	// The same response stored today: the same attributes.
	fresh, _ := idem.NewAnonymousScope("POST /products", "k-new")
	resp, err := idemhttp.FromAPIGatewayV2(events.APIGatewayV2HTTPResponse{
		StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json"}, Cookies: []string{"a=1; Path=/", "b=2"}, Body: `{"id":"2"}`,
	})
	must.NoError(t, err)
	_, err = store.Execute(ctx, fresh, "fp", func(context.Context) (idem.Effect, error) { return idem.Effect{Response: resp}, nil })
	must.NoError(t, err)
	got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("idempotency"), Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: fresh.ID()}}})
	must.NoError(t, err)
	check.Equal(t, types.AttributeValue(meta), got.Item["response_meta"])
	check.Equal(t, types.AttributeValue(&types.AttributeValueMemberN{Value: "2"}), got.Item["format"])

	// A stand-in stored without its body, before: its reason replays.
	big, _ := idem.NewAnonymousScope("POST /products", "k-big")
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("idempotency"), Item: old(big, "fp", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		":status": &types.AttributeValueMemberS{Value: "202"}, ":omitted": &types.AttributeValueMemberS{Value: "too large"},
	}}, "")})
	must.NoError(t, err)
	res, err = store.Transact(ctx, big, "fp", func(context.Context) (idem.Effect, error) { return idem.Effect{}, nil })
	must.NoError(t, err)
	check.Equal(t, events.APIGatewayV2HTTPResponse{
		StatusCode: 202, Headers: map[string]string{idemhttp.HeaderBodyOmitted: "too large"},
	}, idemhttp.ToAPIGatewayV2(res.Response, false))
}
