package outbox_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/idemlambda/idemlambda/internal/outbox"
)

func TestNewEventRejectsBrokenEnvelopes(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for name, f := range map[string]func() error{
		"no source":  func() error { _, err := outbox.NewEvent("", "T", "s", []byte(`{}`), now); return err },
		"no type":    func() error { _, err := outbox.NewEvent("src", "", "s", []byte(`{}`), now); return err },
		"no subject": func() error { _, err := outbox.NewEvent("src", "T", "", []byte(`{}`), now); return err },
		"no time":    func() error { _, err := outbox.NewEvent("src", "T", "s", []byte(`{}`), time.Time{}); return err },
		"bad data":   func() error { _, err := outbox.NewEvent("src", "T", "s", []byte(`{`), now); return err },
	} {
		assert.ErrorIs(t, f(), outbox.ErrInvalidEvent, name)
	}
}
