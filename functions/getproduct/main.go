// Command getproduct is the GET /products/{id} Lambda function. Its main
// reads top to bottom: configuration, client, handler, start (app.Main).
package main

import (
	"io"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/getproduct"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/ddb"
)

func main() {
	app.Main(config.NameGetProduct, config.LoadGetProduct, func(cfg config.GetProduct, out io.Writer) (any, error) {
		db, err := app.Client(cfg.AWS, dynamodb.NewFromConfig, ddb.CountPerContext)
		if err != nil {
			return nil, err
		}
		return getproduct.New(db, cfg, out)
	})
}
