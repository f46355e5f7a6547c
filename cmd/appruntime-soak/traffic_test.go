package main

import (
	"net/http"
	"testing"
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
