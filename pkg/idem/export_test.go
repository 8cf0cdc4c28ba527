package idem

// CacheLen exposes the number of cached records to the external tests.
func CacheLen(s *Store) int {
	if s.cache == nil {
		return 0
	}
	return s.cache.len()
}
