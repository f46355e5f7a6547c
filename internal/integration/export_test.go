package integration

// Cached reports whether id has a cached row, so tests can watch the
// broadcast's eviction apart from the age bound.
func (l *Lookup) Cached(id string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	_, ok := l.rows[id]
	return ok
}
