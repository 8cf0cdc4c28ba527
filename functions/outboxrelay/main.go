// Command outboxrelay is the Lambda function behind the outbox table's
// DynamoDB stream: it publishes each event to EventBridge. Its main reads
// top to bottom: configuration, client, handler, start (app.Main).
package main

import (
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/outboxrelay"
	"github.com/idemlambda/idemlambda/internal/config"
)

func main() {
	app.Main(config.NameOutboxRelay, config.LoadOutboxRelay, func(cfg config.OutboxRelay, rt app.Runtime) (any, error) {
		client, err := app.Client(cfg.AWS, rt.Tracing, eventbridge.NewFromConfig)
		if err != nil {
			return nil, err
		}
		pub, err := outboxrelay.Bridge(client, cfg)
		if err != nil {
			return nil, err
		}
		relay, err := outboxrelay.New(pub, cfg, rt)
		if err != nil {
			return nil, err
		}
		return relay.Handle, nil
	})
}
