package main

import (
	"testing"

	"github.com/appruntime/appruntime/internal/webhook"
)

// TestOnceCountsAtLeastOnce: an event the receiver got again is doubled
// unless the repeats are explained by attempts whose answer the platform
// never saw; then it is redelivered (at least once, same webhook-id).
func TestOnceCountsAtLeastOnce(t *testing.T) {
	for _, c := range []struct {
		name                       string
		events                     int
		ok, cut, got               int
		lost, doubled, redelivered int
	}{
		{"delivered once", 1, 1, 0, 1, 0, 0, 0},
		{"no event", 0, 0, 0, 0, 1, 0, 0},
		{"two events", 2, 1, 0, 1, 0, 1, 0},
		{"never delivered", 1, 0, 1, 0, 1, 0, 0},
		{"recorded, never received", 1, 1, 0, 0, 1, 0, 0},
		{"two 2xx recorded", 1, 2, 0, 2, 0, 1, 0},
		{"received twice, nothing cut off", 1, 1, 0, 2, 0, 1, 0},
		{"received again after a cut-off attempt", 1, 1, 1, 2, 0, 0, 1},
		{"received three times, one cut off", 1, 1, 1, 3, 0, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			pe := &pushedEvents{byTask: map[string][]webhook.Event{}, delivered: map[string]int{}, unanswered: map[string]int{},
				received: func(string) int { return c.got }}
			for i := range c.events {
				id := string(rune('a' + i))
				pe.byTask["t"] = append(pe.byTask["t"], webhook.Event{ID: id, Type: webhook.TaskResumed, TaskID: "t"})
				pe.delivered[id], pe.unanswered[id] = c.ok, c.cut
			}
			lost, doubled := pe.once("t", nil, nil)
			if lost != c.lost || doubled != c.doubled || pe.redelivered != c.redelivered {
				t.Fatalf("lost %d doubled %d redelivered %d, want %d %d %d", lost, doubled, pe.redelivered, c.lost, c.doubled, c.redelivered)
			}
			if (lost+doubled+pe.redelivered > 0) != (len(pe.notes) > 0) {
				t.Fatalf("notes %q", pe.notes)
			}
		})
	}
}
