package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRatiosAreTheMedianOfTheRounds(t *testing.T) {
	t.Parallel()
	round := func(requests int, cpu time.Duration) result {
		return result{latencies: make([]time.Duration, requests), elapsed: time.Second, cpu: cpu}
	}
	// One round slowed down by a neighbour (the third) moves no median.
	base := []result{round(1000, 50*time.Millisecond), round(1000, 50*time.Millisecond), round(400, 60*time.Millisecond)}
	proj := []result{round(800, 80*time.Millisecond), round(700, 70*time.Millisecond), round(100, 90*time.Millisecond)}
	ratios := roundRatios(proj, base)
	require.InDeltaSlice(t, []float64{0.8, 0.7, 0.25}, ratios, 1e-9)
	require.InDelta(t, 0.7, median(ratios), 1e-9)
	require.InDelta(t, 0.75, median([]float64{0.9, 0.7, 0.8, 0.1}), 1e-9)
	require.Equal(t, []float64{0.8, 0.7, 0.25}, ratios, "median does not reorder its input")

	var m measurement
	for _, r := range proj {
		m.add(r)
	}
	require.InDelta(t, 700, m.medianRPS(), 1e-9)
	require.InDelta(t, 100, m.medianCPUPerRequest(), 1e-9) // 100, 100 and 900 µs per request
	require.Equal(t, "read_ratio=0.70 lookup_ratio=0.25", ratioLine(map[string]float64{"read": 0.7, "lookup": 0.25}))
}

func TestRedisCountsAreTotalsOverTheRounds(t *testing.T) {
	t.Parallel()
	stats := "# Commandstats\r\ncmdstat_evalsha:calls=40,usec=120,usec_per_call=3.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=7,usec=9,usec_per_call=1.29,rejected_calls=0,failed_calls=0\r\ncmdstat_get:calls=2,usec=1,usec_per_call=0.50,rejected_calls=0,failed_calls=0\r\n"
	require.Equal(t, redisCount{commands: 42, scripts: 40}, commandCalls(stats), "every command but the bench's own INFO")

	var m measurement
	m.add(result{latencies: make([]time.Duration, 100), redis: redisCount{commands: 400, scripts: 100}})
	m.add(result{latencies: make([]time.Duration, 300), redis: redisCount{commands: 200, scripts: 50}})
	commands, scripts := m.redisPerRequest()
	require.InDelta(t, 1.5, commands, 1e-9)
	require.InDelta(t, 0.375, scripts, 1e-9)
}

func TestVerbsFlag(t *testing.T) {
	t.Parallel()
	var s verbSet
	require.NoError(t, s.Set("write,lookup"))
	require.Equal(t, "write,lookup", s.String())
	require.NoError(t, s.Set("false"))
	require.Empty(t, s)
	require.NoError(t, s.Set("true"))
	require.Equal(t, "read,write,lookup", s.String())
	require.ErrorContains(t, s.Set("read,delete"), `unknown verb "delete"`)
}
