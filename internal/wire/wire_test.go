package wire_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/tables"
	"github.com/idemlambda/idemlambda/internal/wire"
)

func TestLoadReadsEachFunctionsVariables(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"PRODUCTS_TABLE": "p", "IDEMPOTENCY_TABLE": "i", "OUTBOX_TABLE": "o",
		"IDEMPOTENCY_RETENTION": "2h", "LOG_LEVEL": "warn",
	}
	getenv := func(k string) string { return env[k] }
	s, err := wire.Load(getenv, config.CreateProduct)
	require.NoError(t, err)
	assert.Equal(t, wire.Settings{
		Tables:      tables.Names{Products: "p", Idempotency: "i", Outbox: "o"},
		EventSource: "idemlambda.products", Retention: 2 * time.Hour, LogLevel: slog.LevelWarn,
	}, s)

	// getproduct reads only its own table: the others may be absent.
	g, err := wire.Load(func(k string) string { return map[string]string{"PRODUCTS_TABLE": "p"}[k] }, config.GetProduct)
	require.NoError(t, err)
	assert.Equal(t, tables.Names{Products: "p"}, g.Tables)

	_, err = wire.Load(func(string) string { return "" }, config.CreateProduct)
	require.ErrorIs(t, err, config.ErrInvalid)
	assert.Contains(t, err.Error(), "createproduct")
	assert.Contains(t, err.Error(), "IDEMPOTENCY_TABLE")
}
