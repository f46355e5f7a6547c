package task

// SetSearchBounds makes the search's first scan and its bound (without an
// index) small, so a test reaches the indexed path and the bound with a few
// tasks.
func SetSearchBounds(s *Service, firstScan, scanBound int) {
	s.searchIndex.firstScan, s.searchIndex.scanBound = firstScan, scanBound
}
