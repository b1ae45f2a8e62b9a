package kafkaapi

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minikafka/minikafka-go/internal/scram"
)

// tokenBackend adds delegation tokens' credentials to credBackend; the
// token APIs themselves answer DELEGATION_TOKEN_AUTH_DISABLED (the base
// backend's answer).
type tokenBackend struct {
	credBackend
	tokens map[string]TokenCredential // by "<mechanism>/<id>"; read-only after start
}

func (b tokenBackend) DelegationTokenCredential(id string, m scram.Mechanism) (TokenCredential, bool) {
	tc, ok := b.tokens[m.String()+"/"+id]
	return tc, ok
}

// A SCRAM login with tokenauth=true is checked against the token's
// credential, not a user's; an expired token fails; a token-authenticated
// connection is refused every token API (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
// expiry -1), as is a PLAINTEXT one, while a password-authenticated one
// reaches the backend (here DELEGATION_TOKEN_AUTH_DISABLED).
func TestDelegationTokenLoginAndRefusals(t *testing.T) {
	tokens := map[string]TokenCredential{}
	for _, m := range []scram.Mechanism{scram.SHA256, scram.SHA512} {
		for id, expiry := range map[string]int64{"live": time.Now().Add(time.Hour).UnixMilli(), "old": time.Now().Add(-time.Second).UnixMilli()} {
			c, err := scram.NewCredential(m, id+"-hmac", scram.MinIterations)
			if err != nil {
				t.Fatal(err)
			}
			tokens[m.String()+"/"+id] = TokenCredential{Credential: c, Owner: "User:alice", ExpiryMs: expiry}
		}
	}
	h := startListenerWith(t, Config{}, Listener{Name: "SASL_PLAINTEXT", SASLMechanisms: allMechanisms},
		func(b credBackend) Backend { return tokenBackend{credBackend: b, tokens: tokens} })
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	client := func(m sasl.Mechanism) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(h.addr), kgo.SASL(m), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	login := func(m sasl.Mechanism) error {
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, client(m))
		return err
	}
	live := kscram.Auth{User: "live", Pass: "live-hmac", IsToken: true}
	if err := login(live.AsSha256Mechanism()); err != nil {
		t.Fatalf("token login: %v", err)
	}
	for name, m := range map[string]sasl.Mechanism{
		"expired token":           kscram.Auth{User: "old", Pass: "old-hmac", IsToken: true}.AsSha512Mechanism(),
		"token without tokenauth": kscram.Auth{User: "live", Pass: "live-hmac"}.AsSha512Mechanism(),
		"user with tokenauth":     kscram.Auth{User: "alice", Pass: "alice-secret", IsToken: true}.AsSha512Mechanism(),
		"token with a wrong hmac": kscram.Auth{User: "live", Pass: "wrong", IsToken: true}.AsSha512Mechanism(),
	} {
		if err := login(m); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}

	codes := func(cl *kgo.Client) []int16 {
		t.Helper()
		create, err := kmsg.NewPtrCreateDelegationTokenRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		renew := kmsg.NewPtrRenewDelegationTokenRequest()
		renew.HMAC = []byte("x")
		rresp, err := renew.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		expire := kmsg.NewPtrExpireDelegationTokenRequest()
		expire.HMAC = []byte("x")
		eresp, err := expire.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		dresp, err := kmsg.NewPtrDescribeDelegationTokenRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if rresp.ExpiryTimestamp != -1 || eresp.ExpiryTimestamp != -1 {
			t.Errorf("failed renew/expire timestamps %d, %d; want -1", rresp.ExpiryTimestamp, eresp.ExpiryTimestamp)
		}
		return []int16{create.ErrorCode, rresp.ErrorCode, eresp.ErrorCode, dresp.ErrorCode}
	}
	notAllowed := kerr.DelegationTokenRequestNotAllowed.Code
	if got := codes(client(live.AsSha512Mechanism())); got[0] != notAllowed || got[1] != notAllowed || got[2] != notAllowed || got[3] != notAllowed {
		t.Errorf("token connection: codes %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", got)
	}
	disabled := kerr.DelegationTokenAuthDisabled.Code
	if got := codes(client(kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())); got[0] != disabled || got[1] != disabled || got[2] != disabled || got[3] != disabled {
		t.Errorf("password connection: codes %v, want DELEGATION_TOKEN_AUTH_DISABLED", got)
	}

	plain := startServer(t, Config{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(plain.addr), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if got := codes(cl); got[0] != notAllowed || got[3] != notAllowed {
		t.Errorf("PLAINTEXT connection: codes %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", got)
	}
}
