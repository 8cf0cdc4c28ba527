package api

import (
	"errors"

	"github.com/idemlambda/idemlambda/internal/product"
)

func errorsIs(err, target error) bool { return errors.Is(err, target) }

func productCommand(b createBody) (product.CreateCommand, error) {
	return product.NewCreateCommand(b.input)
}
