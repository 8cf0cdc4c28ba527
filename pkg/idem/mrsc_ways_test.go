package idem_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemadmin"
	"github.com/idemlambda/idemlambda/pkg/idem/idemevent"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemsqs"
	"github.com/idemlambda/idemlambda/pkg/idem/idemstream"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// refusals records every request DynamoDB refused as invalid
// (ValidationException): on an MRSC table, a transaction or TTL.
type refusals struct {
	mu   sync.Mutex
	seen []string
}

func (r *refusals) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("refusals",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				var apiErr smithy.APIError
				if errors.As(err, &apiErr) && apiErr.ErrorCode() == "ValidationException" {
					r.mu.Lock()
					r.seen = append(r.seen, middleware.GetOperationName(ctx)+": "+apiErr.ErrorMessage())
					r.mu.Unlock()
				}
				return out, md, err
			}), middleware.After)
	})
}

// order is what the queue, stream and event ways in carry.
type order struct {
	ID string `json:"id"`
}

// On MRSC, no call the library makes is refused for using a transaction
// or TTL: every way in, each twice (its execution, then its duplicate),
// from each Region in turn, and the table's creation and sweep, send no
// TransactWriteItems, TransactGetItems or UpdateTimeToLive, and DynamoDB
// refuses none of their requests; each effect happened once.
func TestMRSCNoCallIsRefusedForATransactionOrTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var refused refusals
		env := newMRSC(t, idemtest.GlobalConfig{WriteLatency: time.Millisecond}, refused.option)
		env.grant(t)
		ctx := context.Background()
		var runs, outside atomic.Int64
		stores := map[string]*idem.Store{}
		for _, r := range mrscRegions {
			stores[r] = env.store(t, r)
		}
		effectOutside := func(context.Context) (idem.Response, error) {
			outside.Add(1)
			return created("outside"), nil
		}
		sharedWrites := func(executing []order, _ []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
			var writes []types.TransactWriteItem
			for range executing {
				runs.Add(1)
				_, w := mrscWrites()
				writes = append(writes, w...)
			}
			return writes, nil
		}
		decodeSQS := func(m events.SQSMessage) (idemsqs.Entry[order], error) {
			return idemsqs.Entry[order]{Principal: "shop", Key: m.MessageId, Value: order{ID: m.Body}}, nil
		}
		sqsEvent := func(id string) events.SQSEvent {
			return events.SQSEvent{Records: []events.SQSMessage{{MessageId: id, Body: id}}}
		}
		kinesisEvent := func(id string) events.KinesisEvent {
			return events.KinesisEvent{Records: []events.KinesisEventRecord{{EventID: id, Kinesis: events.KinesisRecord{SequenceNumber: "1", Data: []byte(id)}}}}
		}
		decodeKinesis := func(r events.KinesisEventRecord) (idemstream.Entry[order], error) {
			return idemstream.Entry[order]{Principal: "shop", Key: r.EventID, Value: order{ID: string(r.Kinesis.Data)}}, nil
		}
		ddbEvent := func(id string) events.DynamoDBEvent {
			return events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{EventID: id, Change: events.DynamoDBStreamRecord{SequenceNumber: "1"}}}}
		}
		decodeDDB := func(r events.DynamoDBEventRecord) (idemstream.Entry[order], error) {
			return idemstream.Entry[order]{Principal: "shop", Key: r.EventID, Value: order{ID: r.EventID}}, nil
		}

		ways := []struct {
			name   string
			writes bool // its effect is the DynamoDB writes counted in runs
			call   func(store *idem.Store, key string) error
		}{
			{"Execute", true, func(s *idem.Store, key string) error {
				_, err := s.Execute(ctx, scope(t, key), "fp", mrscEffect(&runs))
				return err
			}},
			{"Transact", true, func(s *idem.Store, key string) error {
				_, err := s.Transact(ctx, scope(t, key), "fp", mrscEffect(&runs))
				return err
			}},
			{"ExecuteBatch", true, func(s *idem.Store, key string) error {
				res, err := s.ExecuteBatch(ctx, []idem.BatchItem{{Scope: scope(t, key), Fingerprint: "fp", Response: created(key)}},
					func(executing []int, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
						return sharedWrites(make([]order, len(executing)), contended)
					})
				return errors.Join(err, res[0].Err)
			}},
			{"Run", false, func(s *idem.Store, key string) error {
				_, err := s.Run(ctx, scope(t, key), "fp", effectOutside)
				return err
			}},
			{"Do", false, func(s *idem.Store, key string) error {
				_, _, err := idem.Do(ctx, s, scope(t, key), "fp", func(ctx context.Context) (order, error) {
					outside.Add(1)
					return order{ID: key}, nil
				})
				return err
			}},
			{"idemhttp.Handler", false, func(s *idem.Store, key string) error {
				mw, err := idemhttp.New(s, idemhttp.WithPrincipal(func(*http.Request) (string, error) { return "user-1", nil }))
				must.NoError(t, err)
				h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					outside.Add(1)
					w.WriteHeader(http.StatusCreated)
				}))
				req := httptest.NewRequest(http.MethodPost, "/things", strings.NewReader(`{}`))
				req.Header.Set("Idempotency-Key", key)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusCreated {
					return errors.New(rec.Body.String())
				}
				return nil
			}},
			{"idemhttp.APIGatewayV2", false, func(s *idem.Store, key string) error {
				mw, err := idemhttp.New(s, idemhttp.WithPrincipalV2(func(events.APIGatewayV2HTTPRequestContext) (string, error) { return "user-1", nil }))
				must.NoError(t, err)
				h := mw.APIGatewayV2(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
					outside.Add(1)
					return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusCreated}, nil
				})
				resp, err := h(ctx, events.APIGatewayV2HTTPRequest{RouteKey: "POST /things", Headers: map[string]string{"idempotency-key": key},
					RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/things"}}})
				if err == nil && resp.StatusCode != http.StatusCreated {
					err = errors.New(resp.Body)
				}
				return err
			}},
			{"idemsqs.Transact", true, func(s *idem.Store, key string) error {
				c, err := idemsqs.New(s, "orders", decodeSQS)
				must.NoError(t, err)
				_, res := c.Transact(ctx, sqsEvent(key), sharedWrites)
				return res[0].Err
			}},
			{"idemsqs.Run", false, func(s *idem.Store, key string) error {
				c, err := idemsqs.New(s, "mails", decodeSQS)
				must.NoError(t, err)
				_, res := c.Run(ctx, sqsEvent(key), func(context.Context, order) error { outside.Add(1); return nil })
				return res[0].Err
			}},
			{"idemstream.Kinesis.Transact", true, func(s *idem.Store, key string) error {
				k, err := idemstream.NewKinesis(s, "ledger", decodeKinesis)
				must.NoError(t, err)
				_, res := k.Transact(ctx, kinesisEvent(key), sharedWrites)
				return res[0].Err
			}},
			{"idemstream.DynamoDB.Run", false, func(s *idem.Store, key string) error {
				d, err := idemstream.NewDynamoDB(s, "ship", decodeDDB)
				must.NoError(t, err)
				_, res := d.Run(ctx, ddbEvent(key), func(context.Context, order) error { outside.Add(1); return nil })
				return res[0].Err
			}},
			{"idemevent.Wrap", false, func(s *idem.Store, key string) error {
				read := func(e events.EventBridgeEvent) (idemevent.Entry, error) {
					return idemevent.Entry{Principal: e.Source, Key: e.ID}, nil
				}
				h, err := idemevent.Wrap(s, "invoice", read, func(context.Context, events.EventBridgeEvent) (order, error) {
					outside.Add(1)
					return order{ID: key}, nil
				})
				must.NoError(t, err)
				_, err = h(ctx, events.EventBridgeEvent{ID: key, Source: "billing", Detail: json.RawMessage(`{}`)})
				return err
			}},
		}
		var wantRuns, wantOutside int64
		for i, w := range ways {
			key := "key-" + strings.ReplaceAll(w.name, ".", "-")
			for attempt := range 2 {
				region := mrscRegions[(i+attempt)%len(mrscRegions)]
				check.NoError(t, w.call(stores[region], key), "%s in %s, delivery %d", w.name, region, attempt+1)
			}
			if w.writes {
				wantRuns++
			} else {
				wantOutside++
			}
		}
		check.Equal(t, wantRuns, runs.Load(), "each way's writes computed once")
		check.Equal(t, wantOutside, outside.Load(), "each way's outside effect ran once")
		check.Equal(t, int(wantRuns), env.count(t, regionWest, mrscProducts))
		check.Equal(t, int(wantRuns), env.counter(t, regionWest))

		_, err := idemadmin.Table{DB: env.db[regionEast2], Name: mrscIdem}.Lookup(ctx, scope(t, "key-Execute"))
		must.NoError(t, err)
		time.Sleep(idem.DefaultRetention + time.Hour)
		stats, err := stores[regionWest].Sweep(ctx, idem.SweepOptions{})
		must.NoError(t, err)
		check.Equal(t, len(ways), stats.Deleted, "every record, expired, swept")
		check.Equal(t, 0, env.count(t, regionEast, mrscIdem))

		refused.mu.Lock()
		check.Empty(t, refused.seen, "requests DynamoDB refused as invalid")
		refused.mu.Unlock()
		for _, r := range mrscRegions {
			for _, op := range []idemtest.Op{idemtest.OpTransactWriteItems, idemtest.OpTransactGetItems, "UpdateTimeToLive"} {
				check.Equal(t, 0, env.g.Region(r).Calls(op), "%s in %s", op, r)
			}
		}
	})
}
