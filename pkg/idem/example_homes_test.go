package idem_test

import (
	"context"
	"fmt"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemglobal"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// On a global table with multi-Region eventual consistency (here
// simulated, replication an hour behind), a store in each Region claims a
// key in its home, us-east-1, wherever the call arrives: the key runs
// once, and the other Regions' calls replay its answer.
func ExampleWithHomes() {
	ctx := context.Background()
	regions := []string{"us-east-1", "us-west-2", "eu-west-1"}
	g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Regions: regions, Lag: time.Hour})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	clients := map[string]idem.API{}
	for _, r := range regions {
		clients[r] = g.Region(r).HandlerClient()
	}
	if err := idemtable.Create(ctx, g.Region("us-east-1").HandlerClient(), "idempotency", idemtable.Layout{}); err != nil {
		fmt.Println(err)
		return
	}
	scope, _ := idem.NewScope("POST /payments", "tenant-1", "pay-7")
	for _, r := range regions {
		store, err := idem.NewStore(clients[r], "idempotency", idem.WithHomes(idem.Homes{
			Region: r, Clients: clients, Home: idemglobal.OneHome("us-east-1"),
		}))
		if err != nil {
			fmt.Println(err)
			return
		}
		res, err := store.Run(ctx, scope, "fp", func(context.Context) (idem.Response, error) {
			return idem.Response{Body: []byte("charged, called in " + r)}, nil
		})
		fmt.Printf("%s: %s %q %v\n", r, res.Outcome, res.Response.Body, err)
	}
	// Output:
	// us-east-1: executed "charged, called in us-east-1" <nil>
	// us-west-2: replayed "charged, called in us-east-1" <nil>
	// eu-west-1: replayed "charged, called in us-east-1" <nil>
}
