package local

import (
	"context"
	"fmt"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	smithyendpoints "github.com/aws/smithy-go/endpoints"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/ddb"
	"github.com/idemlambda/idemlambda/internal/tracing"
)

// RegionClient returns a DynamoDB client of region among several local
// Regions, each served at its endpoint (endpoints, by Region): a client
// made from its options with another Region calls that Region's
// endpoint, as the SDK's own resolver sends each Region's requests to its
// regional endpoint, so createproduct reaches the keys' home Region the
// same way locally and in Lambda. Dummy credentials; it counts its calls
// per context, as the functions' clients do, traced by t as a function's.
func RegionClient(endpoints map[string]string, region string, t *tracing.Tracing) (*dynamodb.Client, error) {
	if _, ok := endpoints[region]; !ok {
		return nil, fmt.Errorf("local: no endpoint for region %s", region)
	}
	a := storeAWS(endpoints[region])
	a.Region = region
	return app.Client(a, t, dynamodb.NewFromConfig, ddb.CountPerContext, func(o *dynamodb.Options) {
		o.BaseEndpoint = nil
		o.EndpointResolverV2 = byRegion(endpoints)
	})
}

// byRegion resolves each Region's DynamoDB endpoint from a table of them.
type byRegion map[string]string

func (b byRegion) ResolveEndpoint(_ context.Context, p dynamodb.EndpointParameters) (smithyendpoints.Endpoint, error) {
	region := ""
	if p.Region != nil {
		region = *p.Region
	}
	raw, ok := b[region]
	if !ok {
		return smithyendpoints.Endpoint{}, fmt.Errorf("local: no endpoint for region %q", region)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return smithyendpoints.Endpoint{}, fmt.Errorf("local: endpoint of %s: %w", region, err)
	}
	return smithyendpoints.Endpoint{URI: *u}, nil
}
