package idemtest

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"
)

// The table API: CreateTable, DescribeTable, UpdateTable, DeleteTable
// and ListTables, checked as DynamoDB checks them (API Reference,
// CreateTable: the key schema, its attribute definitions, the indexes
// and their projections, the billing mode). A table is created at once:
// it is ACTIVE from the answer to CreateTable on, as on DynamoDB Local.
// The store serves no Streams API, so a table's description has no
// stream, but a global table's (whose stream a test reads with
// Server.Stream).

// tableDesc is what DescribeTable tells of a table beyond its key: how
// it was created.
type tableDesc struct {
	name      string
	id        string
	created   time.Time
	billing   string // PAY_PER_REQUEST or PROVISIONED
	billedAt  time.Time
	rcu, wcu  int64
	keySchema keySchema
	attrs     []attrDef
	gsis      []indexDef
	lsis      []indexDef
}

type attrDef struct{ AttributeName, AttributeType string }

type throughput struct{ ReadCapacityUnits, WriteCapacityUnits int64 }

// tableARN is a table's ARN in this Region (the account is made up).
func (s *Server) tableARN(name string) string {
	return "arn:aws:dynamodb:" + s.region + ":000000000000:table/" + name
}

func tableNotFound(name string) error {
	return &apiError{code: "ResourceNotFoundException", msg: "Requested resource not found: Table: " + name + " not found"}
}

// checkKeySchema checks a table's or an index's key schema: a HASH
// element, then at most one RANGE element on another attribute.
func checkKeySchema(where string, ks keySchema) error {
	switch {
	case len(ks) == 0:
		return invalidf("1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", where)
	case len(ks) > 2:
		return invalidf("1 validation error detected: Value at '%s' failed to satisfy constraint: Member must have length less than or equal to 2", where)
	case ks[0].KeyType != "HASH":
		return invalidf("Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
	case len(ks) == 2 && ks[1].KeyType != "RANGE":
		return invalidf("Invalid KeySchema: The second KeySchemaElement is not a RANGE key type")
	case len(ks) == 2 && ks[0].AttributeName == ks[1].AttributeName:
		return invalidf("Both the Hash Key and the Range Key element in the KeySchema have the same name")
	}
	for _, e := range ks {
		if e.AttributeName == "" {
			return invalidf("1 validation error detected: Value null at '%s.member.attributeName' failed to satisfy constraint: Member must not be null", where)
		}
	}
	return nil
}

// checkIndex checks one secondary index's definition.
func checkIndex(kind string, d indexDef) error {
	if d.IndexName == "" {
		return invalidf("1 validation error detected: Value null at '%s.member.indexName' failed to satisfy constraint: Member must not be null", kind)
	}
	if err := checkKeySchema(kind+".member.keySchema", d.KeySchema); err != nil {
		return err
	}
	switch p := d.Projection.ProjectionType; p {
	case "ALL", "KEYS_ONLY":
		if len(d.Projection.NonKeyAttributes) > 0 {
			return invalidf("One or more parameter values were invalid: ProjectionType is %s, but NonKeyAttributes is specified", p)
		}
	case "INCLUDE":
		if len(d.Projection.NonKeyAttributes) == 0 {
			return invalidf("One or more parameter values were invalid: ProjectionType is INCLUDE, but NonKeyAttributes is not specified")
		}
	case "":
		return invalidf("1 validation error detected: Value null at '%s.member.projection.projectionType' failed to satisfy constraint: Member must not be null", kind)
	default:
		return invalidf("1 validation error detected: Value '%s' at '%s.member.projection.projectionType' failed to satisfy constraint: Member must satisfy enum value set: [ALL, INCLUDE, KEYS_ONLY]", p, kind)
	}
	return nil
}

// createTable serves CreateTable.
func (s *Server) createTable(body []byte) answer {
	var in struct {
		TableName              string
		KeySchema              keySchema
		AttributeDefinitions   []attrDef
		GlobalSecondaryIndexes []indexDef
		LocalSecondaryIndexes  []indexDef
		BillingMode            string
		ProvisionedThroughput  *throughput
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return answerError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	build := func() (*tableMeta, *tableDesc, error) {
		return newTable(in.TableName, in.KeySchema, in.AttributeDefinitions, in.GlobalSecondaryIndexes, in.LocalSecondaryIndexes, in.BillingMode, in.ProvisionedThroughput)
	}
	if _, _, err := build(); err != nil {
		return errorAnswer(err)
	}
	if s.g != nil {
		return s.g.createTable(s, in.TableName, len(in.LocalSecondaryIndexes) > 0, build)
	}
	s.schema.Lock()
	defer s.schema.Unlock()
	if s.data[in.TableName] != nil {
		return errorAnswer(&apiError{code: "ResourceInUseException", msg: "Table already exists: " + in.TableName})
	}
	meta, desc, _ := build()
	d := s.addTable(meta, desc)
	return answerJSON(map[string]any{"TableDescription": s.describe(d, "ACTIVE")})
}

// addTable stores a new table; call it holding s.schema for writing.
func (s *Server) addTable(meta *tableMeta, desc *tableDesc) *tableData {
	d := newTableData(meta, desc)
	s.data[desc.name] = d
	s.mu.Lock()
	s.tables[desc.name] = meta
	delete(s.ttl, desc.name)
	s.mu.Unlock()
	return d
}

// newTable checks a CreateTable request and returns the table it makes.
func newTable(name string, ks keySchema, defs []attrDef, gsis, lsis []indexDef, billing string, tp *throughput) (*tableMeta, *tableDesc, error) {
	if name == "" {
		return nil, nil, invalidf("1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must not be null")
	}
	if len(name) > 255 || strings.IndexFunc(name, func(r rune) bool {
		return !(r == '_' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) >= 0 {
		return nil, nil, invalidf("1 validation error detected: Value '%s' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+", name)
	}
	meta := &tableMeta{types: map[string]string{}}
	for i, d := range defs {
		switch d.AttributeType {
		case "S", "N", "B":
		default:
			return nil, nil, invalidf("1 validation error detected: Value '%s' at 'attributeDefinitions.%d.member.attributeType' failed to satisfy constraint: Member must satisfy enum value set: [B, N, S]", d.AttributeType, i+1)
		}
		if _, dup := meta.types[d.AttributeName]; dup {
			return nil, nil, invalidf("Cannot have two attributes with the same name")
		}
		meta.types[d.AttributeName] = d.AttributeType
	}
	if err := checkKeySchema("keySchema", ks); err != nil {
		return nil, nil, err
	}
	meta.hash, meta.rng = ks.split()

	// Every key attribute, of the table and its indexes, defined; every
	// definition a key attribute.
	used := map[string]bool{}
	for _, e := range ks {
		used[e.AttributeName] = true
	}
	switch {
	case gsis != nil && len(gsis) == 0:
		return nil, nil, invalidf("One or more parameter values were invalid: List of GlobalSecondaryIndexes is empty")
	case lsis != nil && len(lsis) == 0:
		return nil, nil, invalidf("One or more parameter values were invalid: List of LocalSecondaryIndexes is empty")
	case len(gsis) > 20:
		return nil, nil, invalidf("One or more parameter values were invalid: GlobalSecondaryIndex count exceeds the per-table limit of 20")
	case len(lsis) > 5:
		return nil, nil, invalidf("One or more parameter values were invalid: LocalSecondaryIndex count exceeds the per-table limit of 5")
	}
	names := map[string]bool{}
	for kind, list := range map[string][]indexDef{"globalSecondaryIndexes": gsis, "localSecondaryIndexes": lsis} {
		for _, d := range list {
			if err := checkIndex(kind, d); err != nil {
				return nil, nil, err
			}
			if names[d.IndexName] {
				return nil, nil, invalidf("One or more parameter values were invalid: Duplicate index name: %s", d.IndexName)
			}
			names[d.IndexName] = true
			for _, e := range d.KeySchema {
				used[e.AttributeName] = true
			}
		}
	}
	for _, d := range lsis {
		h, r := d.KeySchema.split()
		switch {
		case meta.rng == "":
			return nil, nil, invalidf("One or more parameter values were invalid: Table KeySchema does not have a range key, which is required when specifying a LocalSecondaryIndex")
		case h != meta.hash:
			return nil, nil, invalidf("One or more parameter values were invalid: Index KeySchema does not have the same leading hash key as table KeySchema for index: %s. index hash key: %s, table hash key: %s", d.IndexName, h, meta.hash)
		case r == "":
			return nil, nil, invalidf("One or more parameter values were invalid: Index KeySchema for index %s does not have a range key", d.IndexName)
		}
	}
	var missing, unused []string
	for n := range used {
		if _, ok := meta.types[n]; !ok {
			missing = append(missing, n)
		}
	}
	for n := range meta.types {
		if !used[n] {
			unused = append(unused, n)
		}
	}
	sort.Strings(missing)
	sort.Strings(unused)
	defined := sortedKeys(meta.types)
	switch {
	case len(missing) > 0 && len(gsis)+len(lsis) == 0:
		return nil, nil, invalidf("Invalid KeySchema: Some index key attribute have no definition")
	case len(missing) > 0:
		return nil, nil, invalidf("One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. Keys: [%s], AttributeDefinitions: [%s]", strings.Join(missing, ", "), strings.Join(defined, ", "))
	case len(unused) > 0 && len(gsis)+len(lsis) == 0:
		return nil, nil, invalidf("One or more parameter values were invalid: Number of attributes in KeySchema does not exactly match number of attributes defined in AttributeDefinitions")
	case len(unused) > 0:
		keys := sortedKeys(used)
		return nil, nil, invalidf("One or more parameter values were invalid: Some AttributeDefinitions are not used. AttributeDefinitions: [%s], keys used: [%s]", strings.Join(defined, ", "), strings.Join(keys, ", "))
	}
	for _, d := range gsis {
		meta.indexes = append(meta.indexes, d.meta(true))
	}
	for _, d := range lsis {
		meta.indexes = append(meta.indexes, d.meta(false))
	}

	if billing == "" {
		billing = "PROVISIONED"
	}
	now := time.Now()
	desc := &tableDesc{name: name, id: newID(), created: now, billing: billing, keySchema: ks, attrs: defs, gsis: gsis, lsis: lsis}
	switch billing {
	case "PAY_PER_REQUEST":
		if tp != nil {
			return nil, nil, invalidf("One or more parameter values were invalid: Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST")
		}
		desc.billedAt = now
	case "PROVISIONED":
		if tp == nil || tp.ReadCapacityUnits < 1 || tp.WriteCapacityUnits < 1 {
			return nil, nil, invalidf("One or more parameter values were invalid: ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED")
		}
		desc.rcu, desc.wcu = tp.ReadCapacityUnits, tp.WriteCapacityUnits
	default:
		return nil, nil, invalidf("1 validation error detected: Value '%s' at 'billingMode' failed to satisfy constraint: Member must satisfy enum value set: [PROVISIONED, PAY_PER_REQUEST]", billing)
	}
	return meta, desc, nil
}

// newID is a random identifier in the form of a UUID, as TableId is.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// describe is a table's TableDescription with the given status, a global
// table's replicas included; call it holding s.schema.
func (s *Server) describe(d *tableData, status string) map[string]any {
	out := d.describe(s.tableARN(d.desc.name), status)
	if gt := d.meta.gt; gt != nil {
		s.g.describeGlobal(out, gt, s, d.desc)
	}
	return out
}

// describe is the table's TableDescription with the given status and
// ARN; call it holding s.schema.
func (d *tableData) describe(arn, status string) map[string]any {
	desc := d.desc
	out := map[string]any{
		"TableName":                 desc.name,
		"TableArn":                  arn,
		"TableId":                   desc.id,
		"TableStatus":               status,
		"CreationDateTime":          epoch(desc.created),
		"KeySchema":                 desc.keySchema,
		"AttributeDefinitions":      desc.attrs,
		"ItemCount":                 d.main.count,
		"TableSizeBytes":            d.main.size,
		"DeletionProtectionEnabled": false,
		"ProvisionedThroughput":     map[string]any{"NumberOfDecreasesToday": 0, "ReadCapacityUnits": desc.rcu, "WriteCapacityUnits": desc.wcu},
	}
	if desc.billing == "PAY_PER_REQUEST" {
		out["BillingModeSummary"] = map[string]any{"BillingMode": "PAY_PER_REQUEST", "LastUpdateToPayPerRequestDateTime": epoch(desc.billedAt)}
	}
	index := func(def indexDef, global bool) map[string]any {
		ks := d.indexes[def.IndexName]
		projection := map[string]any{"ProjectionType": def.Projection.ProjectionType}
		if len(def.Projection.NonKeyAttributes) > 0 {
			projection["NonKeyAttributes"] = def.Projection.NonKeyAttributes
		}
		m := map[string]any{
			"IndexName":      def.IndexName,
			"IndexArn":       arn + "/index/" + def.IndexName,
			"KeySchema":      def.KeySchema,
			"Projection":     projection,
			"ItemCount":      ks.count,
			"IndexSizeBytes": ks.size,
		}
		if global {
			m["IndexStatus"] = "ACTIVE"
			m["ProvisionedThroughput"] = map[string]any{"NumberOfDecreasesToday": 0, "ReadCapacityUnits": desc.rcu, "WriteCapacityUnits": desc.wcu}
		}
		return m
	}
	if len(desc.gsis) > 0 {
		var list []map[string]any
		for _, g := range desc.gsis {
			list = append(list, index(g, true))
		}
		out["GlobalSecondaryIndexes"] = list
	}
	if len(desc.lsis) > 0 {
		var list []map[string]any
		for _, l := range desc.lsis {
			list = append(list, index(l, false))
		}
		out["LocalSecondaryIndexes"] = list
	}
	return out
}

// epoch is a time as DynamoDB's JSON carries one: seconds since 1970.
func epoch(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

// describeTable serves DescribeTable.
func (s *Server) describeTable(body []byte) answer {
	var in struct{ TableName string }
	if err := json.Unmarshal(body, &in); err != nil {
		return answerError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	s.schema.RLock()
	defer s.schema.RUnlock()
	d := s.data[in.TableName]
	if d == nil {
		return errorAnswer(tableNotFound(in.TableName))
	}
	return answerJSON(map[string]any{"Table": s.describe(d, "ACTIVE")})
}

// deleteTable serves DeleteTable: the table and its items are gone at
// once.
func (s *Server) deleteTable(body []byte) answer {
	var in struct{ TableName string }
	if err := json.Unmarshal(body, &in); err != nil {
		return answerError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	s.schema.Lock()
	defer s.schema.Unlock()
	d := s.data[in.TableName]
	if d == nil {
		return errorAnswer(tableNotFound(in.TableName))
	}
	if gt := d.meta.gt; gt != nil {
		if err := s.g.deleteReplica(s, gt); err != nil {
			return errorAnswer(err)
		}
	}
	out := s.describe(d, "DELETING")
	delete(s.data, in.TableName)
	s.mu.Lock()
	delete(s.tables, in.TableName)
	delete(s.ttl, in.TableName)
	s.mu.Unlock()
	return answerJSON(map[string]any{"TableDescription": out})
}

// listTables serves ListTables: the names in order, a page at a time.
func (s *Server) listTables(body []byte) answer {
	var in struct {
		ExclusiveStartTableName string
		Limit                   *int
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return answerError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	limit := 100
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > 100 {
			return errorAnswer(invalidf("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value between 1 and 100", *in.Limit))
		}
		limit = *in.Limit
	}
	s.schema.RLock()
	names := sortedKeys(s.data)
	s.schema.RUnlock()
	i := sort.SearchStrings(names, in.ExclusiveStartTableName)
	if i < len(names) && names[i] == in.ExclusiveStartTableName {
		i++
	}
	names = names[i:]
	out := map[string]any{}
	if len(names) > limit {
		names = names[:limit]
		out["LastEvaluatedTableName"] = names[limit-1]
	}
	out["TableNames"] = append([]string{}, names...)
	return answerJSON(out)
}

// updateTable serves UpdateTable: global secondary indexes created (and
// filled from the table's items) or deleted, attribute definitions for
// them, the billing mode and throughput, on every replica of a global
// table. A global table's replicas are the Regions of its Global: a change
// of replicas, witnesses or consistency mode is refused. Other settings
// are accepted and not kept.
func (s *Server) updateTable(body []byte) answer {
	var in struct {
		TableName                 string
		ReplicaUpdates            json.RawMessage
		GlobalTableWitnessUpdates json.RawMessage
		MultiRegionConsistency    string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return answerError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	if len(in.ReplicaUpdates) > 0 && string(in.ReplicaUpdates) != "null" || len(in.GlobalTableWitnessUpdates) > 0 &&
		string(in.GlobalTableWitnessUpdates) != "null" || in.MultiRegionConsistency != "" {
		if s.g != nil && s.g.mode == MRSC {
			return errorAnswer(invalidf("Cannot add replicas to a global table with strong MultiRegionConsistency"))
		}
		return errorAnswer(invalidf("idemtest: the replicas of a table are the Regions of its simulated global table (NewGlobal), fixed when it is created"))
	}
	a := s.updateLocal(body)
	if a.status != http.StatusOK {
		return a
	}
	s.mu.Lock()
	meta := s.tables[in.TableName]
	s.mu.Unlock()
	if meta != nil && meta.gt != nil {
		for _, r := range s.g.replicasOf(meta.gt) {
			if r != s.region {
				s.g.regions[r].updateLocal(body)
			}
		}
	}
	return a
}

// updateLocal applies an UpdateTable to this Region's table.
func (s *Server) updateLocal(body []byte) answer {
	var in struct {
		TableName                   string
		AttributeDefinitions        []attrDef
		BillingMode                 string
		ProvisionedThroughput       *throughput
		GlobalSecondaryIndexUpdates []struct {
			Create *indexDef
			Delete *struct{ IndexName string }
			Update *struct{ IndexName string }
		}
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return answerError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	s.schema.Lock()
	defer s.schema.Unlock()
	d := s.data[in.TableName]
	if d == nil {
		return errorAnswer(tableNotFound(in.TableName))
	}
	t := d.meta
	next := &tableMeta{hash: t.hash, rng: t.rng, types: map[string]string{}, indexes: slices.Clone(t.indexes), gt: t.gt}
	for k, v := range t.types {
		next.types[k] = v
	}
	desc := *d.desc
	desc.gsis = slices.Clone(desc.gsis)
	desc.attrs = slices.Clone(desc.attrs)
	for _, a := range in.AttributeDefinitions {
		if have, ok := next.types[a.AttributeName]; ok {
			if have != a.AttributeType {
				return errorAnswer(invalidf("One or more parameter values were invalid: Attribute %s is defined as %s, not %s", a.AttributeName, have, a.AttributeType))
			}
			continue
		}
		next.types[a.AttributeName] = a.AttributeType
		desc.attrs = append(desc.attrs, a)
	}
	for _, u := range in.GlobalSecondaryIndexUpdates {
		switch {
		case u.Create != nil:
			if err := checkIndex("globalSecondaryIndexUpdates", *u.Create); err != nil {
				return errorAnswer(err)
			}
			for _, ix := range next.indexes {
				if ix.name == u.Create.IndexName {
					return errorAnswer(invalidf("One or more parameter values were invalid: Index %s already exists", ix.name))
				}
			}
			for _, e := range u.Create.KeySchema {
				if _, ok := next.types[e.AttributeName]; !ok {
					return errorAnswer(invalidf("One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. Keys: [%s], AttributeDefinitions: [%s]",
						e.AttributeName, strings.Join(sortedKeys(next.types), ", ")))
				}
			}
			next.indexes = append(next.indexes, u.Create.meta(true))
			desc.gsis = append(desc.gsis, *u.Create)
		case u.Delete != nil:
			i := slices.IndexFunc(next.indexes, func(ix *indexMeta) bool { return ix.global && ix.name == u.Delete.IndexName })
			if i < 0 {
				return errorAnswer(&apiError{code: "ResourceNotFoundException", msg: "Requested resource not found: Index: " + u.Delete.IndexName + " not found"})
			}
			next.indexes = slices.Delete(next.indexes, i, i+1)
			desc.gsis = slices.DeleteFunc(desc.gsis, func(g indexDef) bool { return g.IndexName == u.Delete.IndexName })
		}
	}
	switch in.BillingMode {
	case "":
	case "PAY_PER_REQUEST":
		if desc.billing != "PAY_PER_REQUEST" {
			desc.billedAt = time.Now()
		}
		desc.billing, desc.rcu, desc.wcu = "PAY_PER_REQUEST", 0, 0
	case "PROVISIONED":
		desc.billing = "PROVISIONED"
	default:
		return errorAnswer(invalidf("1 validation error detected: Value '%s' at 'billingMode' failed to satisfy constraint: Member must satisfy enum value set: [PROVISIONED, PAY_PER_REQUEST]", in.BillingMode))
	}
	if tp := in.ProvisionedThroughput; tp != nil {
		if desc.billing == "PAY_PER_REQUEST" {
			return errorAnswer(invalidf("One or more parameter values were invalid: Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST"))
		}
		desc.rcu, desc.wcu = tp.ReadCapacityUnits, tp.WriteCapacityUnits
	}
	if desc.billing == "PROVISIONED" && (desc.rcu < 1 || desc.wcu < 1) {
		return errorAnswer(invalidf("One or more parameter values were invalid: ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED"))
	}
	d.desc = &desc
	d.reindex(next)
	s.mu.Lock()
	s.tables[in.TableName] = next
	s.mu.Unlock()
	return answerJSON(map[string]any{"TableDescription": s.describe(d, "ACTIVE")})
}
