// Command sellerstats is the seller statistics consumer, behind the SQS
// queue the EventBridge rule for ProductCreated fills. Its main reads top
// to bottom: configuration, client, handler, start (app.Main).
package main

import (
	"io"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/sellerstats"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/ddb"
)

func main() {
	app.Main(config.NameSellerStats, config.LoadSellerStats, func(cfg config.SellerStats, out io.Writer) (any, error) {
		db, err := app.Client(cfg.AWS, dynamodb.NewFromConfig, ddb.CountPerContext)
		if err != nil {
			return nil, err
		}
		consumer, err := sellerstats.New(db, cfg, out)
		if err != nil {
			return nil, err
		}
		return consumer.Handle, nil
	})
}
