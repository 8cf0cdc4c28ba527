package outboxrelay_test

import (
	"context"
	"io"
	"testing"

	"github.com/idemlambda/idemlambda/internal/app/outboxrelay"
	"github.com/idemlambda/idemlambda/internal/config"
)

// New assembles the relay from the environment without calling AWS: the
// first call is the first batch's PutEvents.
func TestNewAssemblesFromTheEnvironment(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL_EVENTBRIDGE", "http://127.0.0.1:1")
	cfg, err := config.LoadOutboxRelay(func(k string) string {
		return map[string]string{"EVENT_BUS_NAME": "bus"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := outboxrelay.New(context.Background(), cfg, io.Discard)
	if err != nil || h == nil {
		t.Fatalf("New = %v, %v", h, err)
	}
}
