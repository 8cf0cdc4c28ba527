// Package sweeper assembles the sweeper function around its DynamoDB
// client: a store on the idempotency table, told the tables' kind as the
// functions that write its records are, whose Sweep deletes the expired
// records; the outbox and callers tables' expiring items; the handler
// (internal/expiry), its log and its metrics. The template schedules it
// only where the tables have no TTL (TableKind mrsc).
package sweeper

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/expiry"
	"github.com/idemlambda/idemlambda/internal/globaltable"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

// New assembles the sweeper on db, its log and metrics lines written to
// rt.Out (the function's stdout).
func New(db *dynamodb.Client, cfg config.Sweeper, rt app.Runtime) (*expiry.Handler, error) {
	if db == nil || rt.Out == nil {
		return nil, errors.New("sweeper: needs a DynamoDB client and an output")
	}
	// Not on mrec: its tables have TTL, and a delete in one Region of a
	// record its replica shows expired could, by last writer wins, remove
	// the key's new claim at its home (pkg/idem refuses Sweep to a store
	// with homes for that reason; this one has none to refuse it).
	if cfg.Global.Kind == config.KindMREC {
		return nil, fmt.Errorf("sweeper: %s=%s: the tables have TTL, and a sweep in one Region could delete a record its home has claimed again", config.IdempotencyTableKind.Name, config.KindMREC)
	}
	// Told the kind, not learning it (the role grants no DescribeTable).
	// Runs on regional and mrsc tables, though only an mrsc stack
	// schedules it: a regional one has TTL.
	opts, err := globaltable.StoreOptions(cfg.Global, cfg.AWS.Region, nil)
	if err != nil {
		return nil, err
	}
	store, err := idem.NewStore(db, cfg.IdempotencyTable, opts...)
	if err != nil {
		return nil, err
	}
	rec, err := app.Metrics(cfg.Common, rt.Out, config.NameSweeper)
	if err != nil {
		return nil, err
	}
	return expiry.NewHandler(db, store, expiry.Config{
		IdempotencyTable: cfg.IdempotencyTable,
		Outbox:           expiry.Outbox(cfg.OutboxTable),
		Windows:          expiry.Windows(cfg.CallersTable),
	}, app.Logger(cfg.Common, rt.Out), rec)
}
