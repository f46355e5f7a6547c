package main

import (
	"net/http"
	"testing"
	"time"
)

// TestCounts5xxSparesOnlyWhatTheClientIsToldToRetry: a 503 with
// Retry-After, a queued verb's 502 with Retry-After (its enqueue found no
// master) and a queued verb's 504 are not failures; every other 5xx is.
func TestCounts5xxSparesOnlyWhatTheClientIsToldToRetry(t *testing.T) {
	retry := http.Header{"Retry-After": {"2"}}
	for _, c := range []struct {
		verb   string
		status int
		h      http.Header
		counts bool
	}{
		{"write", 200, nil, false},
		{"write", 429, retry, false},
		{"write", 500, retry, true},
		{"write", 503, retry, false},
		{"write", 503, nil, true},
		{"write", 502, retry, true},
		{"write", 504, nil, true},
		{"run", 502, retry, false},
		{"run", 502, nil, true},
		{"run-python", 504, nil, false},
		{"tool-call", 502, retry, false},
		{"tool-call-ask", 504, nil, false},
		{"approve", 502, retry, true},
	} {
		if got := counts5xx(c.verb, c.status, c.h); got != c.counts {
			t.Errorf("counts5xx(%s, %d, Retry-After %q) = %v, want %v", c.verb, c.status, c.h.Get("Retry-After"), got, c.counts)
		}
	}
}

// TestOnlyAWriteAcknowledgedJustBeforeItsAPIsKillIsExcused: an
// acknowledged write recorded as outcome unknown is excused only when the
// api killed with kill -9 acknowledged it at most killAckWindow before.
func TestOnlyAWriteAcknowledgedJustBeforeItsAPIsKillIsExcused(t *testing.T) {
	kill := time.Now()
	d := &deployment{killedAPI: "127.0.0.1:2", killedAPIAt: kill}
	for _, c := range []struct {
		name    string
		d       *deployment
		a       ack
		excused bool
	}{
		{"just before the kill", d, ack{"127.0.0.1:2", kill.Add(-10 * time.Millisecond)}, true},
		{"at the window's edge", d, ack{"127.0.0.1:2", kill.Add(-killAckWindow)}, true},
		{"long before the kill", d, ack{"127.0.0.1:2", kill.Add(-killAckWindow - time.Millisecond)}, false},
		{"after the kill (the restarted api)", d, ack{"127.0.0.1:2", kill.Add(time.Millisecond)}, false},
		{"by the other api", d, ack{"127.0.0.1:1", kill.Add(-10 * time.Millisecond)}, false},
		{"no api killed", &deployment{}, ack{"127.0.0.1:2", kill.Add(-10 * time.Millisecond)}, false},
	} {
		if got := c.d.ackedJustBeforeKill(c.a); got != c.excused {
			t.Errorf("%s: ackedJustBeforeKill = %v, want %v", c.name, got, c.excused)
		}
	}
}
