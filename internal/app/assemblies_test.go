package app_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/createproduct"
	"github.com/idemlambda/idemlambda/internal/app/getproduct"
	"github.com/idemlambda/idemlambda/internal/app/getseller"
	"github.com/idemlambda/idemlambda/internal/app/outboxrelay"
	"github.com/idemlambda/idemlambda/internal/app/sellerstats"
	"github.com/idemlambda/idemlambda/internal/app/sweeper"
	"github.com/idemlambda/idemlambda/internal/config"
)

// Each function's assembly refuses to build it without its dependencies,
// rather than one that fails at its first invocation.
func TestAssembliesRefuseMissingDependencies(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	_, err := createproduct.New(nil, config.CreateProduct{}, app.Runtime{Out: &out})
	assert.Error(t, err)
	_, err = getproduct.New(nil, config.GetProduct{}, app.Runtime{Out: &out})
	assert.Error(t, err)
	_, err = getseller.New(nil, config.GetSeller{}, app.Runtime{Out: &out})
	assert.Error(t, err)
	_, err = sellerstats.New(nil, config.SellerStats{}, app.Runtime{Out: &out})
	assert.Error(t, err)
	_, err = outboxrelay.New(nil, config.OutboxRelay{}, app.Runtime{Out: &out})
	assert.Error(t, err)
	_, err = sweeper.New(nil, config.Sweeper{}, app.Runtime{Out: &out})
	assert.Error(t, err)
}
