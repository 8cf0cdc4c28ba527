package idemglobal_test

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemglobal"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// Two Regions that claim keys where their calls arrive (idem.WithRegion)
// both run a key requested in each within the replication lag; the
// detector, reading each Region's stream of the idempotency table, reports
// it once, with what each execution answered.
func ExampleDetector() {
	ctx := context.Background()
	g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Regions: []string{"us-east-1", "eu-west-1"}, Lag: time.Hour})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	if err := idemtable.Create(ctx, g.Region("us-east-1").HandlerClient(), "idempotency", idemtable.Layout{}); err != nil {
		fmt.Println(err)
		return
	}
	scope, _ := idem.NewScope("POST /payments", "tenant-1", "pay-42")
	for _, r := range []string{"us-east-1", "eu-west-1"} {
		store, err := idem.NewStore(g.Region(r).HandlerClient(), "idempotency", idem.WithRegion(r))
		if err != nil {
			fmt.Println(err)
			return
		}
		res, _ := store.Run(ctx, scope, "fp", func(context.Context) (idem.Response, error) {
			return idem.Response{Body: []byte("charged in " + r)}, nil
		})
		fmt.Println(r, res.Outcome)
	}
	g.Settle() // as if the lag had passed

	det := &idemglobal.Detector{Trace: &idemtrace.Trace{
		DoubleExecution: func(_ context.Context, i idemtrace.DoubleExecutionInfo) {
			fmt.Printf("%s ran twice (seen in %s): %q in %s, then %q in %s\n", i.Operation, i.Region,
				i.Overwritten.Body, i.Overwritten.Origin, i.Overwriting.Body, i.Overwriting.Origin)
		},
	}}
	for _, r := range []string{"us-east-1", "eu-west-1"} {
		var batch []events.DynamoDBEventRecord
		for _, rec := range g.Region(r).Stream("idempotency").Read() {
			batch = append(batch, rec.DynamoDBEventRecord)
		}
		det.Detect(ctx, batch)
	}
	// Output:
	// us-east-1 executed
	// eu-west-1 executed
	// POST /payments ran twice (seen in us-east-1): "charged in us-east-1" in us-east-1, then "charged in eu-west-1" in eu-west-1
}

// An operator moves the keys homed in us-east-1 to us-west-2: the new home
// takes claims once the old home's lease has ended, plus the margin and
// the replication bound (From); until then the stores' calls for those
// keys answer idem.ErrNoHome.
func ExampleControl_Failover() {
	ctx := context.Background()
	regions := []string{"us-east-1", "us-west-2", "eu-west-1"}
	g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Regions: regions})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	if err := idemtable.Create(ctx, g.Region("us-east-1").HandlerClient(), "idempotency", idemtable.Layout{}); err != nil {
		fmt.Println(err)
		return
	}
	homes := idem.Homes{Region: "eu-west-1", Clients: map[string]idem.API{}, Home: idemglobal.OneHome("us-east-1")}
	for _, r := range regions {
		homes.Clients[r] = g.Region(r).HandlerClient()
	}
	store, err := idem.NewStore(homes.Clients["eu-west-1"], "idempotency", idem.WithHomes(homes))
	if err != nil {
		fmt.Println(err)
		return
	}
	scope, _ := idem.NewScope("POST /payments", "tenant-1", "pay-43")
	if _, err := store.Run(ctx, scope, "fp", func(context.Context) (idem.Response, error) { return idem.Response{}, nil }); err != nil {
		fmt.Println(err)
		return
	}

	ctl := idemglobal.Control{Table: "idempotency", Homes: homes}
	before, _ := ctl.Status(ctx, "us-east-1")
	fmt.Println("home:", before.Home, "epoch", before.Epoch, "held", before.Held)
	after, err := ctl.Failover(ctx, "us-east-1", "us-west-2", 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("home:", after.Home, "epoch", after.Epoch, "waits:", after.From.After(time.Now()))
	// Output:
	// home: us-east-1 epoch 1 held true
	// home: us-west-2 epoch 2 waits: true
}
