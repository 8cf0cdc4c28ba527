// Package globaltable turns what a function's configuration says of its
// tables (config.Global: regional, or a global table's kind and Regions)
// into the options of its idempotency store, so the store is told the
// kind instead of learning it, and on a global table with eventual
// consistency (MREC) claims each key where one Region alone claims it.
package globaltable

import (
	"errors"
	"fmt"

	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemglobal"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
)

// Kind is the library's name of the tables' kind.
func Kind(k config.TableKind) idemtable.Kind {
	switch k {
	case config.KindMREC:
		return idemtable.MREC
	case config.KindMRSC:
		return idemtable.MRSC
	}
	return idemtable.Regional
}

// StoreOptions are the options of a store on tables of g's kind, for a
// function running in region:
//
//   - regional: told so (no DescribeTable call, as before global tables);
//   - MRSC: told so, and its Region, which every claim carries (a
//     condition there sees every Region's writes already);
//   - MREC with a home (g.Home: createproduct): each key claimed in the
//     home Region, from any Region, through replica's client of the
//     table in each of g.Regions (idem.WithHomes), so no key is claimed
//     in two Regions within the replication lag;
//   - MREC without (sellerstats): claims in its own Region
//     (idem.WithRegion). The consumer's keys are event ids, and each
//     event reaches one Region's consumer: its relay publishes only the
//     events its own Region wrote, to its own Region's bus.
func StoreOptions(g config.Global, region string, replica func(region string) (idem.API, error)) ([]idem.Option, error) {
	opts := []idem.Option{idem.WithTableKind(Kind(g.Kind))}
	if g.Kind == config.KindRegional || g.Kind == "" {
		return opts, nil
	}
	if region == "" {
		return nil, fmt.Errorf("globaltable: a %s table needs the function's Region (%s)", g.Kind, config.Region.Name)
	}
	if g.Kind != config.KindMREC || g.Home == "" {
		return append(opts, idem.WithRegion(region)), nil
	}
	if replica == nil {
		return nil, errors.New("globaltable: claims at a home Region need a client of each Region's replica")
	}
	clients := make(map[string]idem.API, len(g.Regions))
	for _, r := range g.Regions {
		c, err := replica(r)
		if err != nil {
			return nil, fmt.Errorf("globaltable: client of %s: %w", r, err)
		}
		clients[r] = c
	}
	return append(opts, idem.WithHomes(idem.Homes{Region: region, Clients: clients, Home: idemglobal.OneHome(g.Home)})), nil
}
