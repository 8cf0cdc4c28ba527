// Command getproduct is the GET /products/{id} Lambda function. It only wires
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
	if err := wire.Serve(context.Background(), config.GetProduct, wire.GetFunc); err != nil {
		fmt.Fprintln(os.Stderr, "getproduct:", err)
		os.Exit(1)
	}
}
