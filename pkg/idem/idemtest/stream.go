package idemtest

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Streams, for the tables of a simulated global table: each Region keeps
// the change records of its replica, its own writes and the replicated
// ones, in the order they were applied there, as DynamoDB Streams does
// (view type NEW_AND_OLD_IMAGES, which an MREC global table requires).
// Several replicated changes of an item applied together make one record,
// as DynamoDB may merge them. The store serves no Streams API: a test
// reads them with Server.Stream, as a Lambda function would receive them.

// streamEntry is one change of a replica, as its Region's stream keeps it.
type streamEntry struct {
	seq            uint64
	at             time.Time
	key, old, next attrs
	origin         string
}

// StreamRecord is one record of a Region's stream: a Lambda event record
// (events.DynamoDBEvent's Records), and the Region whose write made the
// change.
type StreamRecord struct {
	events.DynamoDBEventRecord
	// Origin is the Region whose write made the change: the record's own
	// Region for a local write, another for a replicated one. DynamoDB's
	// records do not say (AWS advises writing an origin attribute into the
	// items and filtering on it); this is the store's, for test oracles.
	Origin string
}

// Replicated reports whether the record is a change another Region made.
func (r StreamRecord) Replicated() bool { return r.Origin != r.AWSRegion }

// appendStream records a change of a replica in its Region's stream; call
// it holding s.schema for writing. A write that changed nothing (the
// delete of an absent item) makes no record.
func (s *Server) appendStream(d *tableData, key, old, next attrs, origin string, at time.Time) {
	if d.meta.gt == nil || old == nil && next == nil {
		return
	}
	s.mu.Lock()
	s.streamSeq++
	d.stream = append(d.stream, streamEntry{seq: s.streamSeq, at: at, key: key, old: old, next: next, origin: origin})
	s.mu.Unlock()
}

// Stream reads the change records of one table's replica in this Region,
// in order, from its creation on. A Stream is one reader's position: use
// one per goroutine (each Server.Stream call makes a new one).
type Stream struct {
	s     *Server
	table string
	d     *tableData
	next  int
}

// Stream returns a reader of a table's stream in this Region: the
// records of every change of its replica (global tables only: a table
// outside a Global has no stream, as the store serves no Streams API).
func (s *Server) Stream(table string) *Stream { return &Stream{s: s, table: table} }

// Read returns the records added since the last Read (the first: since
// the table was created), after applying the replication that is due. A
// table created anew under the same name starts a new stream.
func (st *Stream) Read() []StreamRecord {
	s := st.s
	if s.g != nil {
		s.g.deliver(false)
	}
	s.schema.RLock()
	d := s.data[st.table]
	s.schema.RUnlock()
	if d == nil {
		return nil
	}
	s.mu.Lock()
	if d != st.d {
		st.d, st.next = d, 0
	}
	entries := d.stream[st.next:]
	st.next = len(d.stream)
	s.mu.Unlock()
	out := make([]StreamRecord, 0, len(entries))
	for _, e := range entries {
		out = append(out, s.streamRecord(d, e))
	}
	return out
}

// streamRecord is an entry as Lambda receives it from DynamoDB Streams.
func (s *Server) streamRecord(d *tableData, e streamEntry) StreamRecord {
	name := "MODIFY"
	switch {
	case e.old == nil:
		name = "INSERT"
	case e.next == nil:
		name = "REMOVE"
	}
	size := e.key.size() + e.old.size() + e.next.size()
	return StreamRecord{Origin: e.origin, DynamoDBEventRecord: events.DynamoDBEventRecord{
		AWSRegion:      s.region,
		EventID:        fmt.Sprintf("%s-%d", s.region, e.seq),
		EventName:      name,
		EventSource:    "aws:dynamodb",
		EventVersion:   "1.1",
		EventSourceArn: s.streamARN(d.desc),
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: e.at.Truncate(time.Second)},
			Keys:                        lambdaImage(e.key),
			OldImage:                    lambdaImage(e.old),
			NewImage:                    lambdaImage(e.next),
			SequenceNumber:              fmt.Sprintf("%021d", e.seq),
			SizeBytes:                   int64(size),
			StreamViewType:              "NEW_AND_OLD_IMAGES",
		},
	}}
}

// lambdaImage is an item in the shape of aws-lambda-go's stream events.
func lambdaImage(a attrs) map[string]events.DynamoDBAttributeValue {
	if a == nil {
		return nil
	}
	b, _ := json.Marshal(a.raw())
	var out map[string]events.DynamoDBAttributeValue
	_ = json.Unmarshal(b, &out)
	return out
}

// streamLabel is a stream's label: its table's creation time, as
// DynamoDB labels a stream by when it was enabled.
func streamLabel(desc *tableDesc) string { return desc.created.UTC().Format("2006-01-02T15:04:05.000") }

// streamARN is the ARN of a table's stream in this Region.
func (s *Server) streamARN(desc *tableDesc) string {
	return s.tableARN(desc.name) + "/stream/" + streamLabel(desc)
}
