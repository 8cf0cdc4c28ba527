// Package outboxrelay assembles the outboxrelay function around its
// publisher: the relay handler, its log and its metrics. In Lambda the
// publisher is EventBridge's (Bridge); make run passes its own.
package outboxrelay

import (
	"errors"
	"io"

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
// to out (the function's stdout).
func New(pub outbox.Publisher, cfg config.OutboxRelay, out io.Writer) (*relay.Handler, error) {
	if pub == nil || out == nil {
		return nil, errors.New("outboxrelay: needs a publisher and an output")
	}
	rec, err := app.Metrics(cfg.Common, out, config.NameOutboxRelay)
	if err != nil {
		return nil, err
	}
	return relay.NewHandler(pub, app.Logger(cfg.Common, out), rec), nil
}
