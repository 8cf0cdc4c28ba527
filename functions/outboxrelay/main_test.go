package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/config"
)

func TestSetupReadsTheRelayEnvironment(t *testing.T) {
	env := map[string]string{"EVENT_BUS_NAME": "bus", "LOG_LEVEL": "debug"}
	getenv := func(k string) string { return env[k] }
	h, err := setup(t.Context(), getenv)
	require.NoError(t, err)
	assert.NotNil(t, h)

	var names []string
	for _, v := range config.Vars(config.OutboxRelay) {
		names = append(names, v.Name)
	}
	assert.ElementsMatch(t, []string{"EVENT_BUS_NAME", "EVENT_SOURCE", "LOG_LEVEL"}, names)
}

func TestSetupRejectsAMissingOrBadVariable(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"no bus":    {"LOG_LEVEL": "info"},
		"bad level": {"EVENT_BUS_NAME": "bus", "LOG_LEVEL": "loud"},
	} {
		_, err := setup(t.Context(), func(k string) string { return env[k] })
		assert.ErrorIs(t, err, config.ErrInvalid, name)
	}
}
