package idemtest

import (
	"encoding/json"
	"net/http"
)

type ttlSpec struct {
	AttributeName string `json:"AttributeName"`
	Enabled       bool   `json:"Enabled"`
}

// updateTTL records the setting. Like DynamoDB, which deletes expired
// items only eventually (within days), the store never deletes them:
// readers must treat expired items as absent.
func (s *Server) updateTTL(body []byte) answer {
	var in struct {
		TableName               string  `json:"TableName"`
		TimeToLiveSpecification ttlSpec `json:"TimeToLiveSpecification"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.TableName == "" || in.TimeToLiveSpecification.AttributeName == "" {
		return answerError(http.StatusBadRequest, "ValidationException", "TableName and TimeToLiveSpecification.AttributeName are required")
	}
	s.mu.Lock()
	s.ttl[in.TableName] = in.TimeToLiveSpecification
	s.mu.Unlock()
	return answerJSON(map[string]any{"TimeToLiveSpecification": in.TimeToLiveSpecification})
}

func (s *Server) describeTTL(body []byte) answer {
	var in struct {
		TableName string `json:"TableName"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.TableName == "" {
		return answerError(http.StatusBadRequest, "ValidationException", "TableName is required")
	}
	s.mu.Lock()
	spec, ok := s.ttl[in.TableName]
	s.mu.Unlock()
	desc := map[string]any{"TimeToLiveStatus": "DISABLED"}
	if ok && spec.Enabled {
		desc = map[string]any{"TimeToLiveStatus": "ENABLED", "AttributeName": spec.AttributeName}
	}
	return answerJSON(map[string]any{"TimeToLiveDescription": desc})
}
