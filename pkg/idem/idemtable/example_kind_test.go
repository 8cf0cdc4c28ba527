package idemtable_test

import (
	"context"
	"fmt"
	"log"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// A table's kind, as one DescribeTable reads it: a regional table, a
// global table with multi-Region eventual consistency (two replicas
// here), and one with strong consistency (two replicas and a witness),
// whose replicas see no TTL turned on by Create.
func ExampleDescribe() {
	ctx := context.Background()
	regional := idemtest.NewServer()
	defer regional.Close()
	if err := idemtable.Create(ctx, regional.HandlerClient(), "records", idemtable.Layout{}); err != nil {
		log.Fatal(err)
	}
	info, err := idemtable.Describe(ctx, regional.HandlerClient(), "records")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.Kind, info.Region)

	for _, cfg := range []idemtest.GlobalConfig{
		{Mode: idemtest.MREC, Regions: []string{"eu-west-1", "us-east-1"}},
		{Mode: idemtest.MRSC, Regions: []string{"us-east-1", "us-west-2"}, Witness: "us-east-2"},
	} {
		g, err := idemtest.NewGlobal(cfg)
		if err != nil {
			log.Fatal(err)
		}
		db := g.Region("us-east-1").HandlerClient()
		if err := idemtable.Create(ctx, db, "records", idemtable.Layout{}); err != nil {
			log.Fatal(err)
		}
		info, err := idemtable.Describe(ctx, db, "records")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s %s %v witness=%q\n", info.Kind, info.Region, info.Replicas, info.Witness)
		g.Close()
	}
	// Output:
	// regional us-east-1
	// MREC us-east-1 [eu-west-1] witness=""
	// MRSC us-east-1 [us-west-2] witness="us-east-2"
}
