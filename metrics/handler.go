package metrics

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves a node's admin endpoints:
//
//	/metrics  Prometheus text format
//	/livez    200 while the process serves HTTP
//	/readyz   200 once Source.Ready is nil, else 503 with the reason
//	/         the status page (HTML)
//
// Everything else is 404. Only GET and HEAD are answered.
func Handler(reg *Registry, src Source) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg.Gatherer(), promhttp.HandlerOpts{
		// Bounds the scrapes served at once: each reads every replica.
		MaxRequestsInFlight: 4,
	}))
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := src.Ready(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %v\n", err)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		serveStatus(w, src)
	})
	return mux
}
