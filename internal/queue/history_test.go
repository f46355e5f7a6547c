package queue

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestUnsupportedTellsARefusedCommandFromADownRedis: a Redis that refuses
// the scripts (MEMORY USAGE, EVAL) makes the page say "not available on
// this Redis"; a Redis that cannot be reached stays an error (503).
func TestUnsupportedTellsARefusedCommandFromADownRedis(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]bool{
		"redis eval error: ERR unknown command 'MEMORY', with args beginning with: 'USAGE'": true,
		"ERR unknown subcommand 'USAGE'. Try MEMORY HELP.":                                  true,
		"NOSCRIPT No matching script. Please use EVAL.":                                     true,
		"ERR this command is disabled":                                                      true,
		"dial tcp 127.0.0.1:6379: connect: connection refused":                              false,
		"context deadline exceeded":                                                         false,
	} {
		require.Equal(t, want, unsupported(errors.New(msg)), msg)
	}
	require.Equal(t, "not available on this Redis", Info{MemoryUnavailable: true}.Memory())
	require.Equal(t, "512 B", Info{MemoryBytes: 512}.Memory())
	require.Equal(t, "1.5 KiB", Info{MemoryBytes: 1536}.Memory())
	require.Equal(t, "3.0 MiB", Info{MemoryBytes: 3 << 20}.Memory())
}

// TestEmptyDaysEndToday: a queue without counts charts days zero days
// ending with today, oldest first.
func TestEmptyDaysEndToday(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)
	days := emptyDays(now, 3)
	require.Equal(t, []Day{{Date: time.Date(2026, 2, 27, 0, 0, 0, 0, time.UTC)}, {Date: time.Date(2026, 2, 28, 0, 0, 0, 0, time.UTC)}, {Date: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}}, days)
}
