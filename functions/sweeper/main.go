// Command sweeper is the Lambda function that deletes expired items where
// the tables have no TTL (a global table with multi-Region strong
// consistency): a schedule invokes it. Its main reads top to bottom:
// configuration, client, handler, start (app.Main).
package main

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/sweeper"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/ddb"
)

func main() {
	app.Main(config.NameSweeper, config.LoadSweeper, func(cfg config.Sweeper, rt app.Runtime) (any, error) {
		db, err := app.Client(cfg.AWS, rt.Tracing, dynamodb.NewFromConfig, ddb.CountPerContext)
		if err != nil {
			return nil, err
		}
		h, err := sweeper.New(db, cfg, rt)
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	})
}
