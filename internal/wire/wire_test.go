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
	"github.com/idemlambda/idemlambda/pkg/idem"
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
		Mode: idem.ModeReserve, CacheSize: 1000,
	}, s)

	env["IDEMPOTENCY_MODE"], env["IDEMPOTENCY_CACHE_SIZE"] = "transact", "0"
	s, err = wire.Load(getenv, config.CreateProduct)
	require.NoError(t, err)
	assert.Equal(t, idem.ModeTransact, s.Mode)
	assert.Zero(t, s.CacheSize)

	// A bad mode or cache size fails at start, saying which and why.
	env["IDEMPOTENCY_MODE"], env["IDEMPOTENCY_CACHE_SIZE"] = "fast", "-1"
	_, err = wire.Load(getenv, config.CreateProduct)
	require.ErrorIs(t, err, config.ErrInvalid)
	assert.Contains(t, err.Error(), `IDEMPOTENCY_MODE="fast": idem: unknown mode "fast": want "reserve" or "transact"`)
	assert.Contains(t, err.Error(), `IDEMPOTENCY_CACHE_SIZE="-1" is not a whole number from 0 to`)
	delete(env, "IDEMPOTENCY_MODE")
	delete(env, "IDEMPOTENCY_CACHE_SIZE")

	// getproduct reads only its own table: the others may be absent.
	g, err := wire.Load(func(k string) string { return map[string]string{"PRODUCTS_TABLE": "p"}[k] }, config.GetProduct)
	require.NoError(t, err)
	assert.Equal(t, tables.Names{Products: "p"}, g.Tables)

	_, err = wire.Load(func(string) string { return "" }, config.CreateProduct)
	require.ErrorIs(t, err, config.ErrInvalid)
	assert.Contains(t, err.Error(), "createproduct")
	assert.Contains(t, err.Error(), "IDEMPOTENCY_TABLE")
}
