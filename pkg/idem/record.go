package idem

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Record attribute names (DESIGN.md section 4).
const (
	attrID              = "id"
	attrStatus          = "status"
	attrFingerprint     = "fingerprint"
	attrLeaseToken      = "lease_token"
	attrLeaseExpiresAt  = "lease_expires_at"
	attrResponseStatus  = "response_status"
	attrResponseHeaders = "response_headers"
	attrResponseBody    = "response_body"
	attrCreatedAt       = "created_at"
	attrCompletedAt     = "completed_at"
	attrExpiresAt       = "expires_at"
)

// Record statuses.
const (
	StatusInProgress = "IN_PROGRESS"
	StatusCompleted  = "COMPLETED"
)

// Record is an idempotency record as stored.
type Record struct {
	ID             string
	Status         string
	Fingerprint    string
	LeaseToken     string
	LeaseExpiresAt time.Time // millisecond precision
	Response       Response  // set when Status is COMPLETED
	CreatedAt      time.Time
	CompletedAt    time.Time
	ExpiresAt      time.Time // second precision; DynamoDB TTL
}

// expired mirrors the reserve condition's "expires_at < :now_s".
func (r Record) expired(now time.Time) bool { return r.ExpiresAt.Unix() < now.Unix() }

// Response is what a completed key replays: status, headers and the body
// bytes exactly as first sent.
type Response struct {
	Status  int
	Headers map[string]string
	Body    []byte
}

// size is what the response costs to store, for the size limit.
func (r Response) size() int {
	n := len(r.Body) + 8
	for k, v := range r.Headers {
		n += len(k) + len(v)
	}
	return n
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func timeAttr(t time.Time) types.AttributeValue {
	return str(t.UTC().Format(time.RFC3339Nano))
}

func headersAttr(h map[string]string) types.AttributeValue {
	m := make(map[string]types.AttributeValue, len(h))
	for k, v := range h {
		m[k] = str(v)
	}
	return &types.AttributeValueMemberM{Value: m}
}

// decodeRecord reads an item; a missing or mistyped required attribute is
// ErrCorruptRecord, never a panic.
func decodeRecord(item map[string]types.AttributeValue) (Record, error) {
	var r Record
	var err error
	getS := func(name string, required bool) string {
		av, ok := item[name]
		if !ok {
			if required && err == nil {
				err = fmt.Errorf("%w: missing %s", ErrCorruptRecord, name)
			}
			return ""
		}
		s, ok := av.(*types.AttributeValueMemberS)
		if !ok {
			if err == nil {
				err = fmt.Errorf("%w: %s is not a string", ErrCorruptRecord, name)
			}
			return ""
		}
		return s.Value
	}
	getN := func(name string, required bool) int64 {
		av, ok := item[name]
		if !ok {
			if required && err == nil {
				err = fmt.Errorf("%w: missing %s", ErrCorruptRecord, name)
			}
			return 0
		}
		n, ok := av.(*types.AttributeValueMemberN)
		if !ok {
			if err == nil {
				err = fmt.Errorf("%w: %s is not a number", ErrCorruptRecord, name)
			}
			return 0
		}
		v, perr := strconv.ParseInt(n.Value, 10, 64)
		if perr != nil && err == nil {
			err = fmt.Errorf("%w: %s: %w", ErrCorruptRecord, name, perr)
		}
		return v
	}
	getT := func(name string) time.Time {
		s := getS(name, false)
		if s == "" {
			return time.Time{}
		}
		t, perr := time.Parse(time.RFC3339Nano, s)
		if perr != nil && err == nil {
			err = fmt.Errorf("%w: %s: %w", ErrCorruptRecord, name, perr)
		}
		return t
	}

	r.ID = getS(attrID, true)
	r.Status = getS(attrStatus, true)
	r.Fingerprint = getS(attrFingerprint, true)
	r.LeaseToken = getS(attrLeaseToken, false)
	r.LeaseExpiresAt = time.UnixMilli(getN(attrLeaseExpiresAt, false))
	r.ExpiresAt = time.Unix(getN(attrExpiresAt, true), 0)
	r.CreatedAt = getT(attrCreatedAt)
	r.CompletedAt = getT(attrCompletedAt)
	switch r.Status {
	case StatusInProgress:
		// Without both, no caller could ever take the key over.
		if _, ok := item[attrLeaseToken]; !ok && err == nil {
			err = fmt.Errorf("%w: in progress without %s", ErrCorruptRecord, attrLeaseToken)
		}
		if _, ok := item[attrLeaseExpiresAt]; !ok && err == nil {
			err = fmt.Errorf("%w: in progress without %s", ErrCorruptRecord, attrLeaseExpiresAt)
		}
	case StatusCompleted:
		r.Response.Status = int(getN(attrResponseStatus, true))
		r.Response.Body = []byte(getS(attrResponseBody, true))
		if av, ok := item[attrResponseHeaders]; ok {
			m, ok := av.(*types.AttributeValueMemberM)
			if !ok {
				return Record{}, fmt.Errorf("%w: %s is not a map", ErrCorruptRecord, attrResponseHeaders)
			}
			r.Response.Headers = make(map[string]string, len(m.Value))
			for k, v := range m.Value {
				s, ok := v.(*types.AttributeValueMemberS)
				if !ok {
					return Record{}, fmt.Errorf("%w: header %s is not a string", ErrCorruptRecord, k)
				}
				r.Response.Headers[k] = s.Value
			}
		}
	default:
		if err == nil {
			err = fmt.Errorf("%w: unknown status %q", ErrCorruptRecord, r.Status)
		}
	}
	if err != nil {
		return Record{}, err
	}
	return r, nil
}
