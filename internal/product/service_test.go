package product_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/internal/tables"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

func TestConstructorsRejectMissingWiring(t *testing.T) {
	t.Parallel()
	_, err := product.NewService(product.Config{})
	assert.Error(t, err)
	store := &idem.Store{}
	_, err = product.NewService(product.Config{Store: store})
	assert.Error(t, err, "tables required")
	_, err = product.NewService(product.Config{Store: store, Tables: tables.Names{Products: "p", Outbox: "o"}})
	assert.Error(t, err, "event source required")
	_, err = product.NewService(product.Config{Store: store, Tables: tables.Names{Products: "p", Outbox: "o"}, EventSource: "s"})
	assert.NoError(t, err)
	_, err = product.NewReader(nil, "p")
	assert.Error(t, err)
}
