package outbox_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/outbox"
)

func newEvents(t testing.TB, n int) []outbox.Event {
	t.Helper()
	out := make([]outbox.Event, n)
	for i := range out {
		at := time.Date(2026, 11, 29, 12, 0, i, 0, time.UTC)
		e, err := outbox.NewEvent("idemlambda.products", "ProductCreated", fmt.Sprintf("p-%03d", i), fmt.Appendf(nil, `{"n":%d}`, i), at)
		require.NoError(t, err)
		out[i] = e
	}
	return out
}
