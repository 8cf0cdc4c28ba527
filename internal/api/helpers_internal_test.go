package api

import (
	"github.com/idemlambda/idemlambda/internal/product"
)

// decodedCommand exposes the command decodeCreate validated.
func decodedCommand(b createBody) product.CreateCommand { return b.cmd }
