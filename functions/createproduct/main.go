// Command createproduct is the POST /products Lambda function. It only wires
// configuration; internal/api serves the request.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/wire"
)

func main() {
	if err := wire.Serve(context.Background(), config.CreateProduct, wire.CreateFunc); err != nil {
		fmt.Fprintln(os.Stderr, "createproduct:", err)
		os.Exit(1)
	}
}
