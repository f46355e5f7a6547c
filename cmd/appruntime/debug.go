package main

import (
	"log/slog"
	"net/http"
	"net/http/pprof"
)

// startDebug serves Go's profiler on addr (DEBUG_ADDR, e.g. 127.0.0.1:6060)
// when it is set, for profiling a process under load. It is off by default;
// the configuration refuses any address but a loopback one.
func startDebug(log *slog.Logger, addr string) {
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	go func() {
		if err := http.ListenAndServe(addr, mux); err != nil {
			log.Error("debug listener stopped", "addr", addr, "error", err.Error())
		}
	}()
	log.Info("debug listener (pprof)", "addr", addr)
}
