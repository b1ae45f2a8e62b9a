package kafkaapi

import (
	"fmt"
	"log/slog"
	"time"
)

// Defaults for the zero values of Config.
const (
	DefaultMaxRequestBytes = 100 << 20 // Kafka's socket.request.max.bytes
	DefaultMaxInFlight     = 32
	DefaultRequestTimeout  = 30 * time.Second
)

// Config tunes a Server. The zero value is usable: every zero field takes
// its default.
type Config struct {
	// MaxRequestBytes bounds one request frame (the int32 size prefix). A
	// larger or negative size closes that connection. Default 100 MiB.
	MaxRequestBytes int32

	// MaxInFlight bounds the requests per connection that have been
	// started but not yet answered. Default 32.
	MaxInFlight int

	// RequestTimeout bounds backend calls whose request carries no timeout
	// of its own (InitProducerId, auto-creation in Metadata, CreateTopics
	// with TimeoutMillis <= 0). Default 30s.
	RequestTimeout time.Duration

	// Logger receives per-connection problems at Debug. Default
	// slog.Default().
	Logger *slog.Logger
}

// withDefaults validates c in one place and fills in the defaults.
func (c Config) withDefaults() (Config, error) {
	if c.MaxRequestBytes < 0 {
		return c, &ConfigError{Field: "MaxRequestBytes", Reason: fmt.Sprintf("%d is negative", c.MaxRequestBytes)}
	}
	if c.MaxInFlight < 0 {
		return c, &ConfigError{Field: "MaxInFlight", Reason: fmt.Sprintf("%d is negative", c.MaxInFlight)}
	}
	if c.RequestTimeout < 0 {
		return c, &ConfigError{Field: "RequestTimeout", Reason: fmt.Sprintf("%v is negative", c.RequestTimeout)}
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
