package binding

// Cached reports whether id has a cache entry, so tests can watch the
// pub/sub eviction apart from the stamp check.
func (s *Service) Cached(id string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.entries[id]
	return ok
}
