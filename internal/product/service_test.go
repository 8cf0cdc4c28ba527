package product_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

func TestConstructorsRejectMissingWiring(t *testing.T) {
	t.Parallel()
	_, err := product.NewService(product.Config{})
	assert.Error(t, err)
	store := &idem.Store{}
	_, err = product.NewService(product.Config{Store: store})
	assert.ErrorContains(t, err, "table names are required")
	_, err = product.NewService(product.Config{Store: store, ProductsTable: "p"})
	assert.ErrorContains(t, err, "outbox table")
	_, err = product.NewService(product.Config{Store: store, ProductsTable: "p", OutboxTable: "o"})
	assert.ErrorContains(t, err, "event source")
	_, err = product.NewService(product.Config{Store: store, ProductsTable: "p", OutboxTable: "o", EventSource: "s"})
	assert.NoError(t, err)
	_, err = product.NewReader(nil, "p")
	assert.Error(t, err)
}
