package store

// SetPlanThresholds lets tests force every page plan of ListSensors on a small catalog.
func SetPlanThresholds(s *Store, filterFirstMax, deferredJoinOffset int) {
	s.filterFirstMax, s.deferredJoinOffset = filterFirstMax, deferredJoinOffset
}
