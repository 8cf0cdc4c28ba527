package idemotel_test

import (
	"context"
	"fmt"
	"log"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemotel"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// A store whose calls are traced: a first Run and its retry, each a span
// with its phases as children. In a function, the provider is the
// application's (an OTLP exporter to a collector); here the SDK's
// in-memory recorder keeps the spans to print.
func ExampleNewTrace() {
	server := idemtest.Start() // stands in for DynamoDB
	defer server.Close()
	ctx := context.Background()
	if err := idemtable.Create(ctx, server.Client(), "idempotency", idemtable.Layout{}); err != nil {
		log.Fatal(err)
	}
	spans := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))

	// The spans carry a keyed hash of each scope, which the operators,
	// who hold the key, look records up by: read the key from the
	// function's secret configuration, never from the code.
	hasher, err := idemtrace.NewScopeHasher([]byte("32 random bytes from the secrets"))
	if err != nil {
		log.Fatal(err)
	}
	store, err := idem.NewStore(server.Client(), "idempotency", idem.WithTrace(idemotel.NewTrace(provider, idemotel.WithScopeHasher(hasher))))
	if err != nil {
		log.Fatal(err)
	}
	scope, err := idem.NewScope("POST /emails", "user-1", "key-1")
	if err != nil {
		log.Fatal(err)
	}
	send := func(context.Context) (idem.Response, error) {
		return idem.Response{Body: []byte(`{"sent":true}`)}, nil // the e-mail, sent once
	}
	for range 2 { // the request, and the client's retry
		if _, err := store.Run(ctx, scope, "fingerprint", send); err != nil {
			log.Fatal(err)
		}
	}

	value := func(attrs []attribute.KeyValue, key attribute.Key) string {
		for _, a := range attrs {
			if a.Key == key {
				return a.Value.String()
			}
		}
		return ""
	}
	for _, s := range spans.Ended() { // in the order they ended
		switch s.Name() {
		case "idem.run":
			fmt.Println(s.Name(), value(s.Attributes(), idemotel.AttrOutcome),
				value(s.Attributes(), idemotel.AttrScopeHash) == hasher.Hash(scope.ID()))
		case "idem.claim":
			fmt.Println("  ", s.Name(), value(s.Attributes(), idemotel.AttrClaimResult))
		default:
			fmt.Println("  ", s.Name())
		}
	}
	// Output:
	//    idem.claim won
	//    idem.effect
	//    idem.commit
	// idem.run executed true
	//    idem.claim replayed
	// idem.run replayed true
}
