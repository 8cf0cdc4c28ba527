// Package outboxrelay assembles the outboxrelay function around its
// publisher: the relay handler, its log and its metrics. In Lambda the
// publisher is EventBridge's (Bridge); make run passes its own.
package outboxrelay

import (
	"errors"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/outbox/bridge"
	"github.com/idemlambda/idemlambda/internal/relay"
)

// Bridge is the relay's EventBridge publisher: client publishing to the
// configured bus with the configured source.
func Bridge(client bridge.PutEventsAPI, cfg config.OutboxRelay) (*bridge.Publisher, error) {
	return bridge.New(client, bridge.Config{Bus: cfg.EventBusName, Source: cfg.EventSource})
}

// New assembles outboxrelay around pub, its log and metrics lines written
// to rt.Out (the function's stdout).
func New(pub outbox.Publisher, cfg config.OutboxRelay, rt app.Runtime) (*relay.Handler, error) {
	if pub == nil || rt.Out == nil {
		return nil, errors.New("outboxrelay: needs a publisher and an output")
	}
	rec, err := app.Metrics(cfg.Common, rt.Out, config.NameOutboxRelay)
	if err != nil {
		return nil, err
	}
	return relay.NewHandler(pub, app.Logger(cfg.Common, rt.Out), rec, rt.Tracing, cfg.EventBusName, cfg.AWS.Region), nil
}
