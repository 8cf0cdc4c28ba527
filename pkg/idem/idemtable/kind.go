package idemtable

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Kind is what DynamoDB makes of a table across Regions: a regional
// table, or a global table in one of its two consistency modes. The zero
// Kind is unknown. pkg/idem commits a key's effect as the kind allows
// (its package documentation's "Global tables").
type Kind string

// The kinds of table.
const (
	// Regional is a table in one Region.
	Regional Kind = "regional"
	// MREC is a global table with multi-Region eventual consistency
	// (DynamoDB's default): a condition sees only its own Region's
	// replica, and concurrent writes in two Regions resolve by last
	// writer wins.
	MREC Kind = "MREC"
	// MRSC is a global table with multi-Region strong consistency
	// (exactly three Regions: three replicas, or two and a witness): a
	// condition sees the latest version in every Region, a write of an
	// item another Region is writing is refused
	// (ReplicatedWriteConflictException), and DynamoDB supports no
	// transaction, no TTL and no local secondary index on it.
	MRSC Kind = "MRSC"
)

// Info is what DescribeTable says of a table's kind.
type Info struct {
	Kind Kind
	// Region is the Region of the replica described (from its ARN).
	Region string
	// Replicas are the other Regions holding a replica of a global
	// table; Witness is an MRSC table's witness Region, if it has one.
	Replicas []string
	Witness  string
}

// Describer is the call Describe makes; *dynamodb.Client has it.
type Describer interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// Describe reads a table's kind with one DescribeTable (a control-plane
// call: no capacity units; it needs the dynamodb:DescribeTable
// permission).
func Describe(ctx context.Context, db Describer, name string) (Info, error) {
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return Info{}, fmt.Errorf("idemtable: describe table %s: %w", name, err)
	}
	if out.Table == nil {
		return Info{}, fmt.Errorf("idemtable: describe table %s: no description", name)
	}
	return infoOf(out.Table), nil
}

// infoOf is what a TableDescription says of the table's kind: MRSC
// reports its MultiRegionConsistency, MREC only its replicas (never the
// Region described itself).
func infoOf(d *types.TableDescription) Info {
	info := Info{Kind: Regional}
	// arn:aws:dynamodb:<Region>:<account>:table/<name>
	if parts := strings.Split(aws.ToString(d.TableArn), ":"); len(parts) > 3 {
		info.Region = parts[3]
	}
	for _, r := range d.Replicas {
		if name := aws.ToString(r.RegionName); name != "" && name != info.Region {
			info.Replicas = append(info.Replicas, name)
		}
	}
	for _, w := range d.GlobalTableWitnesses {
		info.Witness = aws.ToString(w.RegionName)
	}
	switch {
	case d.MultiRegionConsistency == types.MultiRegionConsistencyStrong:
		info.Kind = MRSC
	case len(info.Replicas) > 0:
		info.Kind = MREC
	}
	return info
}
