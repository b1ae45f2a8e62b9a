package main

import (
	"encoding/json"
	"expvar"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"
)

// serveDebug serves Go's profiling endpoints (/debug/pprof/...) on addr
// (bound is the address it listens on) until the returned stop is called. It uses its own ServeMux, so nothing
// else is exposed; stop waits for the serving goroutine to end.
//
// /debug/vars serves expvar's variables, among them whatever vars
// (a JSON-encodable value each) holds, read at each request.
func serveDebug(addr string, logger *slog.Logger, vars map[string]func() any) (bound string, stop func(), err error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/vars", func(w http.ResponseWriter, _ *http.Request) {
		out := map[string]any{}
		expvar.Do(func(kv expvar.KeyValue) { out[kv.Key] = json.RawMessage(kv.Value.String()) })
		for k, f := range vars {
			out[k] = f()
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(out)
	})
	return serveHTTP(addr, &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, logger, "pprof")
}
