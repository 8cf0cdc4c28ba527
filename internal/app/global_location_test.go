package app_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/getproduct"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// A client that posts a product and follows the 201's Location, in the
// Region it posted to, must find the product: product.Reader reads
// strongly consistently for that. On mrec createproduct writes the
// product at its key's home from every Region, and getproduct reads its
// own Region's replica, so in a Region other than the home the Location
// answers 404 until replication brings the product (held back here).
func TestTheLocationOfAProductIsFoundInTheRegionThatCreatedIt(t *testing.T) {
	t.Skip("known gap on mrec, not fixed here: a 201 answered in a Region other than the keys' home names a product " +
		"only the home's replica holds until replication; getproduct would have to read it at the home (or the " +
		"Location name the home's API), a design change for the issue's owner")
	regions := []string{"us-east-1", "eu-west-1"}
	g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Regions: regions, Lag: time.Hour})
	require.NoError(t, err)
	stacks := newGlobalStack(t, g, config.Global{Kind: config.KindMREC, Regions: regions, Home: regions[0]})
	away := stacks[regions[1]]
	get, err := getproduct.New(away.client, config.GetProduct{
		Common: config.Common{LogLevel: slog.LevelInfo}, AWS: config.AWS{Region: away.name}, ProductsTable: "products",
	}, app.Runtime{Out: &logbuf.Buffer{}})
	require.NoError(t, err)

	a := away.post(t, "key-location", `{"name":"Widget","price_cents":100,"currency":"EUR","seller_id":"`+uuid.NewString()+`"}`)
	require.Equal(t, 201, a.status, a.body)
	id := createdID(t, a)
	resp, err := get(context.Background(), events.APIGatewayV2HTTPRequest{
		RouteKey: "GET /products/{id}", RawPath: "/products/" + id, PathParameters: map[string]string{"id": id},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID:  uuid.NewString(),
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: "/products/" + id},
			Authorizer: signed(),
		},
	})
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode, "GET %s in %s, where POST answered 201: %s", id, away.name, resp.Body)
}

// On mrsc a Region lost stays lost for as long as it takes, and its
// relay with it; the events of the outbox items it had written and not
// yet published (their origin it) wait for that relay alone: no other
// Region's relay publishes them, though every replica holds the items
// (for 7 days, until the sweeper deletes them). Past the lost Region's
// stream's 24 hours they are published by no one unless an operator
// re-publishes them, as the mrec runbook says.
func TestALostMRSCRegionsEventsArePublishedByAnother(t *testing.T) {
	t.Skip("known gap, not fixed here: an item's origin names one Region's relay, and none takes over a lost " +
		"Region's; docs/operations.md's mrsc runbook now says to re-publish them from the outbox table")
	regions := []string{"us-east-1", "us-east-2"}
	g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Mode: idemtest.MRSC, Regions: regions, Witness: "us-west-2"})
	require.NoError(t, err)
	stacks := newGlobalStack(t, g, config.Global{Kind: config.KindMRSC, Regions: regions})
	lost, up := stacks[regions[1]], stacks[regions[0]]
	a := lost.post(t, "key-lost", `{"name":"Widget","price_cents":100,"currency":"EUR","seller_id":"`+uuid.NewString()+`"}`)
	require.Equal(t, 201, a.status, a.body)
	require.NoError(t, g.Down(lost.name))
	up.relayAll(t)
	require.Equal(t, 1, up.published+up.replicas, "the item reached the Region still up")
	require.Equal(t, 1, up.published, "the lost Region's event published by a Region still up")
}
