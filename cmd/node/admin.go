package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// serveAdmin serves h (the node's metrics, health endpoints and status
// page) on addr until the returned stop is called; bound is the address it
// listens on. stop waits for the serving goroutine to end.
func serveAdmin(addr string, h http.Handler, logger *slog.Logger) (bound string, stop func(), err error) {
	return serveHTTP(addr, &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute},
		logger, "metrics, health and status")
}

// serveHTTP listens on addr and serves srv there in a goroutine until the
// returned stop shuts it down (within a second) and waits for it; what
// names the server in the logs.
func serveHTTP(addr string, srv *http.Server, logger *slog.Logger, what string) (bound string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("HTTP server stopped", "serving", what, "err", err)
		}
	}()
	logger.Info("serving "+what, "addr", ln.Addr().String())
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
