package main

import (
	"io"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/config"
)

// TestWorkerMemoryLimitFollowsTheCSVCache checks that the worker's soft
// memory limit is CSV_CACHE_MB plus the headroom, unless the operator set
// GOMEMLIMIT, which then stands.
func TestWorkerMemoryLimitFollowsTheCSVCache(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := &config.Config{Tools: config.Tools{CSVCacheBytes: 256 << 20}}

	t.Setenv("GOMEMLIMIT", "")
	require.NoError(t, os.Unsetenv("GOMEMLIMIT"))
	debug.SetMemoryLimit(math.MaxInt64)
	require.EqualValues(t, 320<<20, setWorkerMemoryLimit(log, cfg))
	require.EqualValues(t, 320<<20, debug.SetMemoryLimit(-1))

	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(1 << 30)
	require.EqualValues(t, 1<<30, setWorkerMemoryLimit(log, cfg), "the operator's limit stands")
	require.EqualValues(t, 1<<30, debug.SetMemoryLimit(-1))
}
