package idemtest

import (
	"slices"
	"time"
)

// The table API of a simulated global table: a table created in one Region
// is created in every Region of its Global at once, as if UpdateTable had
// added the replicas (and, for MRSC, the witness) in the same call;
// DescribeTable reports it as DynamoDB does; UpdateTable and
// UpdateTimeToLive apply to every replica; DeleteTable removes one MREC
// replica, and is refused on MRSC.

// createTable creates a table in every Region of the Global, each replica
// with its own id, ARN and stream. A name that exists in another Region
// only (whose replica was deleted) makes a regional table here, as a
// CreateTable in that Region does on DynamoDB.
func (g *Global) createTable(origin *Server, name string, lsi bool, build func() (*tableMeta, *tableDesc, error)) answer {
	regions := make([]*Server, 0, len(g.names))
	for _, r := range g.names {
		regions = append(regions, g.regions[r])
	}
	for _, s := range regions {
		s.schema.Lock()
		defer s.schema.Unlock()
	}
	if origin.data[name] != nil {
		return errorAnswer(&apiError{code: "ResourceInUseException", msg: "Table already exists: " + name})
	}
	global := true
	for _, s := range regions {
		global = global && s.data[name] == nil
	}
	if !global {
		meta, desc, _ := build()
		return answerJSON(map[string]any{"TableDescription": origin.describe(origin.addTable(meta, desc), "ACTIVE")})
	}
	if g.mode == MRSC && lsi {
		return errorAnswer(invalidf("Local secondary indexes are not supported for global tables with MultiRegionConsistency set to STRONG"))
	}
	gt := &gtable{name: name, replicas: slices.Clone(g.names)}
	var d *tableData
	for _, s := range regions {
		meta, desc, _ := build()
		meta.gt = gt
		if rd := s.addTable(meta, desc); s == origin {
			d = rd
		}
	}
	g.mu.Lock()
	for _, r := range g.names {
		g.dropPending(r, name)
	}
	g.mu.Unlock()
	return answerJSON(map[string]any{"TableDescription": origin.describe(d, "ACTIVE")})
}

// replicasOf is the Regions holding a global table's replicas.
func (g *Global) replicasOf(gt *gtable) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(gt.replicas)
}

// describeGlobal adds to a replica's TableDescription what DynamoDB
// reports of a global table there (verified against DynamoDB by probes of
// the 2019.11.21 version: GlobalTableVersion, the other replicas, never
// the replica itself, GlobalTableSettingsReplicationMode; for MRSC
// MultiRegionConsistency STRONG and the witness, which MREC tables do not
// report), and its stream.
func (g *Global) describeGlobal(out map[string]any, gt *gtable, s *Server, desc *tableDesc) {
	out["StreamSpecification"] = map[string]any{"StreamEnabled": true, "StreamViewType": "NEW_AND_OLD_IMAGES"}
	out["LatestStreamArn"] = s.streamARN(desc)
	out["LatestStreamLabel"] = streamLabel(desc)
	replicas := g.replicasOf(gt)
	if len(replicas) < 2 {
		return // the last replica is a regional table again
	}
	var list []map[string]any
	for _, r := range replicas {
		if r != s.region {
			list = append(list, map[string]any{"RegionName": r, "ReplicaStatus": "ACTIVE", "GlobalTableSettingsReplicationMode": "ENABLED_WITH_OVERRIDES"})
		}
	}
	out["GlobalTableVersion"] = "2019.11.21"
	out["GlobalTableSettingsReplicationMode"] = "ENABLED_WITH_OVERRIDES"
	out["Replicas"] = list
	if g.mode == MRSC {
		out["MultiRegionConsistency"] = string(MRSC)
		if g.witness != "" {
			out["GlobalTableWitnesses"] = []map[string]any{{"RegionName": g.witness, "WitnessStatus": "ACTIVE"}}
		}
	}
}

// deleteReplica removes a Region's replica from a global table (MREC; MRSC
// refuses it); call it holding the Region's schema for writing.
func (g *Global) deleteReplica(s *Server, gt *gtable) error {
	if g.mode == MRSC {
		return invalidf("Deletion of only one table replica is not supported for global tables with MultiRegionConsistency set to STRONG.")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	gt.replicas = slices.DeleteFunc(gt.replicas, func(r string) bool { return r == s.region })
	g.dropPending(s.region, gt.name)
	return nil
}

// dropPending forgets the changes on their way to a Region's replica of a
// table; call it holding g.mu.
func (g *Global) dropPending(region, table string) {
	g.pending[region] = slices.DeleteFunc(g.pending[region], func(c *change) bool { return c.table == table })
}

// updateTTL applies an UpdateTimeToLive to every replica (MREC, whose TTL
// settings are kept in sync; the change counts for the hour's rule on
// each); MRSC refuses TTL.
func (g *Global) updateTTL(origin *Server, table string, want ttlSpec) answer {
	if g.mode == MRSC {
		return errorAnswer(invalidf("TimeToLive is not supported for global tables with MultiRegionConsistency set to STRONG"))
	}
	now := time.Now()
	origin.mu.Lock()
	err := checkTTL(origin.ttl[table], want, now)
	origin.mu.Unlock()
	if err != nil {
		return errorAnswer(err)
	}
	origin.mu.Lock()
	meta := origin.tables[table]
	origin.mu.Unlock()
	replicas := []string{origin.region}
	if meta != nil && meta.gt != nil {
		replicas = g.replicasOf(meta.gt)
	}
	for _, r := range replicas {
		s := g.regions[r]
		s.mu.Lock()
		s.ttl[table] = ttlState{spec: want, changed: now}
		s.mu.Unlock()
	}
	return answerJSON(map[string]any{"TimeToLiveSpecification": want})
}
