package idemtest

import (
	"encoding/json"
	"net/http"
	"time"
)

type ttlSpec struct {
	AttributeName string `json:"AttributeName"`
	Enabled       bool   `json:"Enabled"`
}

// ttlState is a table's TTL setting and when it last changed.
type ttlState struct {
	spec    ttlSpec
	changed time.Time
}

// ttlInterval is how long DynamoDB refuses another UpdateTimeToLive on a
// table after one that changed it (API Reference, UpdateTimeToLive: "It
// can take up to one hour for the change to fully process. Any additional
// UpdateTimeToLive calls for the same table during this one hour duration
// result in a ValidationException").
const ttlInterval = time.Hour

// updateTTL records the setting, refused as DynamoDB refuses it: a table
// that does not exist, a setting the table already has (checked first,
// whenever it comes), a change within the hour after the last. Like
// DynamoDB, which deletes expired items only eventually (within days),
// the store never deletes them: readers must treat expired items as
// absent.
func (s *Server) updateTTL(body []byte) answer {
	var in struct {
		TableName               string  `json:"TableName"`
		TimeToLiveSpecification ttlSpec `json:"TimeToLiveSpecification"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.TableName == "" || in.TimeToLiveSpecification.AttributeName == "" {
		return answerError(http.StatusBadRequest, "ValidationException", "TableName and TimeToLiveSpecification.AttributeName are required")
	}
	want := in.TimeToLiveSpecification
	if _, err := s.table(in.TableName); err != nil {
		return errorAnswer(tableNotFound(in.TableName))
	}
	if s.g != nil {
		return s.g.updateTTL(s, in.TableName, want)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := checkTTL(s.ttl[in.TableName], want, time.Now()); err != nil {
		return errorAnswer(err)
	}
	s.ttl[in.TableName] = ttlState{spec: want, changed: time.Now()}
	return answerJSON(map[string]any{"TimeToLiveSpecification": want})
}

// checkTTL refuses a TTL change DynamoDB refuses, given the table's
// current setting.
func checkTTL(cur ttlState, want ttlSpec, now time.Time) error {
	switch {
	case want.Enabled && cur.spec.Enabled && want.AttributeName == cur.spec.AttributeName:
		return invalidf("TimeToLive is already enabled")
	case want.Enabled && cur.spec.Enabled:
		return invalidf("TimeToLive is active on a different AttributeName")
	case !want.Enabled && !cur.spec.Enabled:
		return invalidf("TimeToLive is already disabled")
	case !cur.changed.IsZero() && now.Sub(cur.changed) < ttlInterval:
		return invalidf("Time to live has been modified multiple times within a fixed interval")
	}
	return nil
}

func (s *Server) describeTTL(body []byte) answer {
	var in struct {
		TableName string `json:"TableName"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.TableName == "" {
		return answerError(http.StatusBadRequest, "ValidationException", "TableName is required")
	}
	if _, err := s.table(in.TableName); err != nil {
		return errorAnswer(tableNotFound(in.TableName))
	}
	s.mu.Lock()
	spec := s.ttl[in.TableName].spec
	s.mu.Unlock()
	desc := map[string]any{"TimeToLiveStatus": "DISABLED"}
	if spec.Enabled {
		desc = map[string]any{"TimeToLiveStatus": "ENABLED", "AttributeName": spec.AttributeName}
	}
	return answerJSON(map[string]any{"TimeToLiveDescription": desc})
}
