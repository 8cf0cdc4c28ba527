// Command sellerstats is the seller statistics consumer, behind the SQS
// queue the EventBridge rule for ProductCreated fills. Its main reads top
// to bottom: configuration, client, handler, start (app.Main).
package main

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/sellerstats"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/ddb"
)

func main() {
	app.Main(config.NameSellerStats, config.LoadSellerStats, func(cfg config.SellerStats, rt app.Runtime) (any, error) {
		db, err := app.Client(cfg.AWS, rt.Tracing, dynamodb.NewFromConfig, ddb.CountPerContext)
		if err != nil {
			return nil, err
		}
		consumer, err := sellerstats.New(db, cfg, rt)
		if err != nil {
			return nil, err
		}
		return consumer.Handle, nil
	})
}
