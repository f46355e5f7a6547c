package main

import (
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/appruntime/appruntime/internal/config"
)

// WorkerMemoryHeadroom is what the worker's soft memory limit allows above
// CSV_CACHE_MB: the process's own heap, its jobs' buffers and the parse's
// garbage (encoding/csv's strings of each record), so that the garbage
// collector runs before the heap doubles past the cache.
const WorkerMemoryHeadroom = 64 << 20

// setWorkerMemoryLimit sets the worker's soft memory limit (GOMEMLIMIT) to
// cacheBytes plus WorkerMemoryHeadroom unless the operator set GOMEMLIMIT,
// and returns the limit in force. Without it a worker whose live heap is a
// full CSV cache lets as much garbage pile up before collecting it.
func setWorkerMemoryLimit(log *slog.Logger, cfg *config.Config) int64 {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return debug.SetMemoryLimit(-1)
	}
	limit := cfg.Tools.CSVCacheBytes + WorkerMemoryHeadroom
	debug.SetMemoryLimit(limit)
	log.Info("worker memory limit", "gomemlimit_mib", limit>>20, "from", "CSV_CACHE_MB + 64 MiB")
	return limit
}
