// Package sellerstats assembles the seller statistics consumer around its
// DynamoDB client: a store on the idempotency table in transact mode, the
// counter on the sellers table, the SQS consumer, its log and its
// metrics.
package sellerstats

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/globaltable"
	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/internal/sellers/sellersqs"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemotel"
)

// New assembles sellerstats on db, its log and metrics lines written to
// rt.Out (the function's stdout). opts add to, and override, the configured
// store options.
func New(db *dynamodb.Client, cfg config.SellerStats, rt app.Runtime, opts ...idem.Option) (*sellersqs.Consumer, error) {
	if db == nil || rt.Out == nil {
		return nil, errors.New("sellerstats: needs a DynamoDB client and an output")
	}
	// Told its table's kind (no DescribeTable, which the role does not
	// grant). On a global table each Region's consumer claims the events
	// that reach it in its own Region (globaltable.StoreOptions says why
	// no event reaches two) and counts on shards of its own.
	global, err := globaltable.StoreOptions(cfg.Global, cfg.AWS.Region, nil)
	if err != nil {
		return nil, err
	}
	first, err := sellers.RegionShards(cfg.Global.Regions, cfg.AWS.Region)
	if err != nil {
		return nil, err
	}
	// A transaction's outcome, when unknown, is read back detached from
	// the batch's context: bounded to fit in the consumer's deadline margin.
	opts = append(append([]idem.Option{
		idem.WithRetention(cfg.Idempotency.Retention), idem.WithCache(cfg.Idempotency.CacheSize, 0),
		idem.WithReleaseTimeout(sellersqs.DeadlineMargin / 2), idem.WithConflictAttempts(sellersqs.MaxTxAttempts),
		// The idempotency phases as spans in the function's trace
		// (none, and no cost, when tracing is off).
		idem.WithTrace(idemotel.NewTrace(rt.Tracing.Provider())),
	}, global...), opts...)
	store, err := idem.NewStore(db, cfg.Idempotency.Table, opts...)
	if err != nil {
		return nil, err
	}
	counter, err := sellers.NewCounter(cfg.SellersTable)
	if err != nil {
		return nil, err
	}
	counter.FirstShard = first
	rec, err := app.Metrics(cfg.Common, rt.Out, config.NameSellerStats)
	if err != nil {
		return nil, err
	}
	return sellersqs.NewConsumer(store, counter, cfg.EventSource, app.Logger(cfg.Common, rt.Out), rec, rt.Tracing)
}
