package outboxrelay_test

import (
	"io"
	"testing"

	"github.com/idemlambda/idemlambda/internal/app/outboxrelay"
	"github.com/idemlambda/idemlambda/internal/config"
)

func load(t *testing.T, env map[string]string) config.OutboxRelay {
	t.Helper()
	cfg, err := config.LoadOutboxRelay(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// New assembles the relay from its configuration without calling AWS: the
// first call is the first batch's PutEvents.
func TestNewAssemblesFromTheConfiguration(t *testing.T) {
	t.Parallel()
	h, err := outboxrelay.New(load(t, map[string]string{
		"EVENT_BUS_NAME": "bus", "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s",
		"AWS_ENDPOINT_URL_EVENTBRIDGE": "http://127.0.0.1:1",
	}), io.Discard)
	if err != nil || h == nil {
		t.Fatalf("New = %v, %v", h, err)
	}
}

// Without Lambda's region and credentials the relay does not start, rather
// than failing at its first batch.
func TestNewNeedsRegionAndCredentials(t *testing.T) {
	t.Parallel()
	if _, err := outboxrelay.New(load(t, map[string]string{"EVENT_BUS_NAME": "bus"}), io.Discard); err == nil {
		t.Fatal("New without AWS_REGION and credentials succeeded")
	}
}
