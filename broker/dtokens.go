package broker

import (
	"slices"
	"time"

	"github.com/minikafka/minikafka-go/broker/kafkabackend"
)

// DelegationTokenConfig is the node's delegation token settings, under
// Kafka's names.
type DelegationTokenConfig struct {
	// SecretKey is delegation.token.secret.key: the key of every token's
	// HMAC. It must be the same on every node; "" disables tokens, as
	// does a node without a SASL listener (the APIs then answer
	// DELEGATION_TOKEN_AUTH_DISABLED).
	SecretKey string
	// MaxLifetimeMs is delegation.token.max.lifetime.ms: no token lives
	// longer, however renewed (7 days).
	MaxLifetimeMs int64
	// ExpiryTimeMs is delegation.token.expiry.time.ms: a token's life
	// from its creation or renewal, unless the request asks for less
	// (24 hours).
	ExpiryTimeMs int64
	// ExpiryCheckIntervalMs is delegation.token.expiry.check.interval.ms:
	// how often the metadata leader removes expired tokens (1 hour).
	ExpiryCheckIntervalMs int64
}

// DefaultDelegationTokens are Kafka's defaults, tokens disabled.
func DefaultDelegationTokens() DelegationTokenConfig {
	return DelegationTokenConfig{MaxLifetimeMs: 7 * 24 * 3600 * 1000, ExpiryTimeMs: 24 * 3600 * 1000, ExpiryCheckIntervalMs: 3600 * 1000}
}

// validateDelegationTokens checks the token settings.
func (c *Config) validateDelegationTokens() error {
	d := c.DelegationTokens
	switch {
	case d.MaxLifetimeMs < 1:
		return bad("delegation_token_max_lifetime_ms", d.MaxLifetimeMs, "must be at least 1")
	case d.ExpiryTimeMs < 1:
		return bad("delegation_token_expiry_time_ms", d.ExpiryTimeMs, "must be at least 1")
	case d.ExpiryCheckIntervalMs < 1:
		return bad("delegation_token_expiry_check_interval_ms", d.ExpiryCheckIntervalMs, "must be at least 1")
	}
	return nil
}

// tokensConfig is the Kafka backend's part of the token settings.
func (c *Config) tokensConfig() kafkabackend.TokenConfig {
	sasl := slices.ContainsFunc(c.Listeners, ListenerConfig.isSASL)
	return kafkabackend.TokenConfig{
		Enabled:       c.DelegationTokens.SecretKey != "" && sasl,
		SecretKey:     []byte(c.DelegationTokens.SecretKey),
		MaxLifetimeMs: c.DelegationTokens.MaxLifetimeMs,
		ExpiryTimeMs:  c.DelegationTokens.ExpiryTimeMs,
	}
}

// tokenExpiryCheck is how often the metadata leader sweeps expired tokens.
func (c *Config) tokenExpiryCheck() time.Duration {
	return time.Duration(c.DelegationTokens.ExpiryCheckIntervalMs) * time.Millisecond
}
