package idem

import "time"

// WithCache keeps up to entries completed records in memory (an LRU), so a
// replay of a key this process completed or replayed costs no DynamoDB
// call, until its record's expires_at. The responses held never total
// more than maxBytes (0 means 16 MB). Without this option, or with 0
// entries, there is no cache.
func WithCache(entries, maxBytes int) Option {
	return func(s *Store) {
		s.cacheEntries = entries
		if maxBytes != 0 {
			s.cacheBytes = maxBytes
		}
	}
}

// remember caches a completed record.
func (s *Store) remember(id, fingerprint string, resp Response, expiresAt time.Time) {
	if s.cache != nil {
		s.cache.put(id, fingerprint, resp, expiresAt)
	}
}

// replay answers with the response of rec, the completed record a claim
// met, and caches it.
func (s *Store) replay(id, fingerprint string, rec record) Result {
	resp := responseOf(rec)
	s.remember(id, fingerprint, resp, rec.ExpiresAt)
	return Result{Response: resp, Outcome: OutcomeReplayed}
}
