// Command getseller is the GET /sellers/{id} Lambda function. Its main
// reads top to bottom: configuration, client, handler, start (app.Main).
package main

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/getseller"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/ddb"
)

func main() {
	app.Main(config.NameGetSeller, config.LoadGetSeller, func(cfg config.GetSeller, rt app.Runtime) (any, error) {
		db, err := app.Client(cfg.AWS, rt.Tracing, dynamodb.NewFromConfig, ddb.CountPerContext)
		if err != nil {
			return nil, err
		}
		return getseller.New(db, cfg, rt)
	})
}
