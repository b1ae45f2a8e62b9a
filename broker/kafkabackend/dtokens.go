package kafkabackend

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/internal/scram"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
)

// TokenConfig is the node's delegation token settings.
type TokenConfig struct {
	// Enabled: a token secret is set and the node has a SASL listener.
	Enabled bool
	// SecretKey is delegation.token.secret.key, the same on every node:
	// each node derives a token's HMAC from it, so none is stored.
	SecretKey []byte
	// MaxLifetimeMs and ExpiryTimeMs are delegation.token.max.lifetime.ms
	// and delegation.token.expiry.time.ms.
	MaxLifetimeMs int64
	ExpiryTimeMs  int64
}

var errTokensDisabled = fmt.Errorf("%w: delegation tokens need delegation_token_secret_key and a SASL listener", kerr.DelegationTokenAuthDisabled)

// tokenHMAC is Kafka's DelegationTokenManager.createHmac: HmacSHA512 of
// the token id keyed by the secret.
func (b *Backend) tokenHMAC(tokenID string) []byte {
	m := hmac.New(sha512.New, b.cfg.Tokens.SecretKey)
	m.Write([]byte(tokenID))
	return m.Sum(nil)
}

// tokenPassword is the SCRAM password of a token: its HMAC in base64, as
// Kafka's clients send it.
func tokenPassword(mac []byte) string { return base64.StdEncoding.EncodeToString(mac) }

// newTokenID is a random id in the form of Kafka's Uuid.toString.
func newTokenID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// CreateDelegationToken stamps the token with this node's clock, as
// Kafka's controller does with its own: expiry after
// delegation.token.expiry.time.ms, never past the maximum lifetime (the
// request's if shorter). The SCRAM credentials of its HMAC are derived
// here and stored; the HMAC is not.
func (b *Backend) CreateDelegationToken(ctx context.Context, owner, requester string, renewers []string, maxLifetimeMs int64) (kafkaapi.DelegationToken, error) {
	if !b.cfg.Tokens.Enabled {
		return kafkaapi.DelegationToken{}, errTokensDisabled
	}
	if !b.deps.Meta.State().Initialized() {
		return kafkaapi.DelegationToken{}, fmt.Errorf("%w: the cluster is not formed yet", kerr.NotController)
	}
	if len(renewers) > metadata.MaxDelegationTokenRenewers {
		return kafkaapi.DelegationToken{}, fmt.Errorf("%w: %d renewers, at most %d", kerr.PolicyViolation, len(renewers), metadata.MaxDelegationTokenRenewers)
	}
	life := b.cfg.Tokens.MaxLifetimeMs
	if maxLifetimeMs > 0 {
		life = min(life, maxLifetimeMs)
	}
	now := time.Now().UnixMilli()
	t := metadata.DelegationToken{TokenID: newTokenID(), Owner: owner, Requester: requester, Renewers: renewers,
		IssueMs: now, MaxMs: now + life}
	t.ExpiryMs = min(t.MaxMs, now+b.cfg.Tokens.ExpiryTimeMs)
	mac := b.tokenHMAC(t.TokenID)
	for _, m := range []scram.Mechanism{scram.SHA256, scram.SHA512} {
		c, err := scram.NewCredential(m, tokenPassword(mac), scram.MinIterations)
		if err != nil {
			return kafkaapi.DelegationToken{}, err
		}
		t.Credentials = append(t.Credentials, metadata.ScramCredential{User: t.TokenID, Mechanism: metadata.ScramMechanism(m),
			Iterations: int32(c.Iterations), Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey})
	}
	if _, err := b.deps.Meta.Propose(ctx, metadata.CreateDelegationToken{Token: t}); err != nil {
		return kafkaapi.DelegationToken{}, err
	}
	return kafkaapi.DelegationToken{TokenID: t.TokenID, Owner: owner, Requester: requester, Renewers: renewers,
		IssueMs: t.IssueMs, MaxMs: t.MaxMs, ExpiryMs: t.ExpiryMs, HMAC: mac}, nil
}

// tokenByHMAC finds the id of the token whose HMAC is mac (Kafka looks
// tokens up by HMAC too); "" when none.
func (b *Backend) tokenByHMAC(mac []byte) string {
	for _, id := range b.deps.Meta.State().DelegationTokenIDs() {
		if hmac.Equal(b.tokenHMAC(id), mac) {
			return id
		}
	}
	return ""
}

// RenewDelegationToken extends the token by the request's period, at
// most delegation.token.expiry.time.ms.
func (b *Backend) RenewDelegationToken(ctx context.Context, principal string, mac []byte, periodMs int64) (int64, error) {
	period := b.cfg.Tokens.ExpiryTimeMs
	if periodMs > 0 {
		period = min(period, periodMs)
	}
	return b.updateToken(ctx, principal, mac, period, false)
}

// ExpireDelegationToken sets the token's expiry to now plus the period;
// a negative one removes it.
func (b *Backend) ExpireDelegationToken(ctx context.Context, principal string, mac []byte, periodMs int64) (int64, error) {
	return b.updateToken(ctx, principal, mac, periodMs, true)
}

func (b *Backend) updateToken(ctx context.Context, principal string, mac []byte, period int64, expire bool) (int64, error) {
	if !b.cfg.Tokens.Enabled {
		return 0, errTokensDisabled
	}
	id := b.tokenByHMAC(mac)
	if id == "" {
		return 0, kerr.DelegationTokenNotFound
	}
	r, err := b.deps.Meta.Propose(ctx, metadata.UpdateDelegationToken{TokenID: id, Principal: principal, Expire: expire,
		NowMs: time.Now().UnixMilli(), PeriodMs: period})
	if err != nil {
		return 0, err
	}
	return r.ExpiryMs, nil
}

// DescribeDelegationTokens lists the stored tokens with their HMACs.
func (b *Backend) DescribeDelegationTokens() ([]kafkaapi.DelegationToken, error) {
	if !b.cfg.Tokens.Enabled {
		return nil, errTokensDisabled
	}
	ts := b.deps.Meta.State().DelegationTokens()
	out := make([]kafkaapi.DelegationToken, len(ts))
	for i, t := range ts {
		out[i] = kafkaapi.DelegationToken{TokenID: t.TokenID, Owner: t.Owner, Requester: t.Requester, Renewers: t.Renewers,
			IssueMs: t.IssueMs, MaxMs: t.MaxMs, ExpiryMs: t.ExpiryMs, HMAC: b.tokenHMAC(t.TokenID)}
	}
	return out, nil
}

// DelegationTokenCredential reads a token's credential from the local
// metadata copy, so any node accepts any token.
func (b *Backend) DelegationTokenCredential(tokenID string, m scram.Mechanism) (kafkaapi.TokenCredential, bool) {
	if !b.cfg.Tokens.Enabled {
		return kafkaapi.TokenCredential{}, false
	}
	t, ok := b.deps.Meta.State().DelegationToken(tokenID)
	if !ok {
		return kafkaapi.TokenCredential{}, false
	}
	for _, c := range t.Credentials {
		if c.Mechanism == metadata.ScramMechanism(m) {
			return kafkaapi.TokenCredential{Owner: t.Owner, ExpiryMs: t.ExpiryMs,
				Credential: scram.Credential{Salt: c.Salt, Iterations: int(c.Iterations), StoredKey: c.StoredKey, ServerKey: c.ServerKey}}, true
		}
	}
	return kafkaapi.TokenCredential{}, false
}
