package broker_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// tokenCluster starts n nodes with a PLAINTEXT and a SASL_PLAINTEXT
// listener, authorisation on, the super user admin, the users alice and
// bob, and delegation tokens on.
func tokenCluster(t *testing.T, n int, opts ...testcluster.Option) *testcluster.Cluster {
	t.Helper()
	opts = append([]testcluster.Option{func(c *broker.Config) {
		c.Listeners = []broker.ListenerConfig{
			{Name: "PLAINTEXT", Addr: "127.0.0.1:0"},
			{Name: "SASL_PLAINTEXT", Addr: "127.0.0.1:0"},
		}
		c.SASLUsers = []broker.SASLUser{{Name: "admin", Password: "admin-secret"},
			{Name: "alice", Password: "alice-secret"}, {Name: "bob", Password: "bob-secret"}}
		c.Security.RaftAllowUnauthenticated = true
		c.AuthorizationEnabled = true
		c.SuperUsers = []string{"User:admin"}
		c.DelegationTokens.SecretKey = "token-secret-shared-by-every-node"
		c.DelegationTokens.ExpiryCheckIntervalMs = 100
	}}, opts...)
	c := testcluster.Start(t, n, opts...)
	for _, u := range []string{"admin", "alice", "bob"} {
		waitForSASLPlaintextUser(t, c, u, u+"-secret")
	}
	return c
}

// nodeAddr is a node's bound address of a listener.
func nodeAddr(t *testing.T, c *testcluster.Cluster, id int, name string) string {
	t.Helper()
	for _, l := range c.Node(id).Listeners() {
		if l.Name == name {
			return l.Addr
		}
	}
	t.Fatalf("node %d has no listener %s", id, name)
	return ""
}

func plainSASLClient(t *testing.T, seeds []string, m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.SASL(m)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// metadataVia sends one Metadata request to the client's first seed: the
// login happens on that node.
func metadataVia(ctx context.Context, cl *kgo.Client) error {
	_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	return err
}

func waitForSASLPlaintextUser(t *testing.T, c *testcluster.Cluster, user, pass string) {
	t.Helper()
	for _, addr := range listenerAddrs(c, "SASL_PLAINTEXT") {
		eventually(t, 20*time.Second, "user "+user+" on "+addr, func() bool {
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(kscram.Auth{User: user, Pass: pass}.AsSha512Mechanism()), kgo.RequestRetries(0))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return metadataVia(ctx, cl) == nil
		})
	}
}

// tokenAuth is the SCRAM login of a delegation token: its id as the
// user, its HMAC in base64 as the password, tokenauth=true.
func tokenAuth(tok kadm.DelegationToken) kscram.Auth {
	return kscram.Auth{User: tok.TokenID, Pass: base64.StdEncoding.EncodeToString(tok.HMAC), IsToken: true}
}

func grantUserACL(ctx context.Context, t *testing.T, admin *kgo.Client, principal, user string, op kmsg.ACLOperation) {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeUser, user, kmsg.ACLResourcePatternTypeLiteral
	cr.Principal, cr.Host, cr.Operation, cr.PermissionType = principal, "*", op, kmsg.ACLPermissionTypeAllow
	req.Creations = append(req.Creations, cr)
	resp, err := req.RequestWith(ctx, admin)
	if err != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("create USER acl: %+v, %v", resp, err)
	}
}

// Alice creates a delegation token with kadm; a client logs in with it on
// every node (not only the one that stored it) as alice, whose ACLs then
// apply; the token-authenticated connection, and a PLAINTEXT one, may not
// create tokens; bob may not create a token for alice without
// CREATE_TOKENS on User:alice, nor renew hers, and sees her tokens only
// with DESCRIBE_TOKENS; an expired token's login fails and the leader's
// check removes it; a token survives a node's restart from a snapshot.
func TestDelegationTokens(t *testing.T) {
	t.Parallel()
	c := tokenCluster(t, 2, func(cfg *broker.Config) {
		cfg.MetaRaft.SnapshotThreshold = 1
		cfg.MetaRaft.SnapshotInterval = 50 * time.Millisecond
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	saslAddrs := listenerAddrs(c, "SASL_PLAINTEXT")
	admin := plainSASLClient(t, saslAddrs, kscram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism())
	createTopic(t, admin, "alices", 1, 2)
	mustCreateACLs(t, kadm.NewClient(admin), kadm.NewACLs().Allow("User:alice").Topics("alices").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))

	alice := kadm.NewClient(plainSASLClient(t, saslAddrs, kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()))
	bob := kadm.NewClient(plainSASLClient(t, saslAddrs, kscram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism()))
	tok, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Renewers: []kadm.Principal{{Type: "User", Name: "carol"}}})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Owner != (kadm.Principal{Type: "User", Name: "alice"}) || tok.TokenID == "" || len(tok.HMAC) != 64 ||
		tok.ExpiryTimestamp.Sub(tok.IssueTimestamp) != 24*time.Hour || tok.MaxTimestamp.Sub(tok.IssueTimestamp) != 7*24*time.Hour {
		t.Fatalf("created %+v", tok)
	}

	// The token logs in on each node, as alice: her WRITE on alices lets
	// it produce; it may not create tokens.
	// (The node that did not store it has it once its copy of the
	// metadata catches up.)
	for id := 1; id <= 2; id++ {
		eventually(t, 10*time.Second, "token login on a node", func() bool {
			cl := plainSASLClient(t, []string{nodeAddr(t, c, id, "SASL_PLAINTEXT")}, tokenAuth(tok).AsSha256Mechanism(), kgo.RequestRetries(0))
			defer cl.Close()
			return metadataVia(ctx, cl) == nil
		})
	}
	worker := plainSASLClient(t, saslAddrs, tokenAuth(tok).AsSha512Mechanism())
	if err := worker.ProduceSync(ctx, &kgo.Record{Topic: "alices", Value: []byte("by token")}).FirstErr(); err != nil {
		t.Fatalf("produce as the token: %v", err)
	}
	if _, err := kadm.NewClient(worker).CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
		t.Fatalf("create on a token connection: %v", err)
	}
	plain, err := kgo.NewClient(kgo.SeedBrokers(listenerAddrs(c, "PLAINTEXT")...))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := kadm.NewClient(plain).CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
		t.Fatalf("create on PLAINTEXT: %v", err)
	}

	// bob: another owner needs CREATE_TOKENS; renewing needs to be owner
	// or renewer; describing needs DESCRIBE_TOKENS.
	aliceP := kadm.Principal{Type: "User", Name: "alice"}
	if _, err := bob.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Owner: &aliceP}); !errors.Is(err, kerr.DelegationTokenAuthorizationFailed) {
		t.Fatalf("bob creates for alice: %v", err)
	}
	if _, err := bob.RenewDelegationToken(ctx, tok.HMAC, time.Hour); !errors.Is(err, kerr.DelegationTokenOwnerMismatch) {
		t.Fatalf("bob renews alice's: %v", err)
	}
	if ts, err := bob.DescribeDelegationTokens(ctx); err != nil || len(ts) != 0 {
		t.Fatalf("bob describes: %+v, %v", ts, err)
	}
	grantUserACL(ctx, t, admin, "User:bob", "User:alice", kmsg.ACLOperationDescribeTokens)
	grantUserACL(ctx, t, admin, "User:bob", "User:alice", kmsg.ACLOperationCreateTokens)
	// (Each node applies the new ACLs shortly.)
	eventually(t, 10*time.Second, "bob describes with DESCRIBE_TOKENS", func() bool {
		ts, err := bob.DescribeDelegationTokens(ctx, aliceP)
		return err == nil && len(ts) == 1 && bytes.Equal(ts[0].HMAC, tok.HMAC)
	})
	var forAlice kadm.DelegationToken
	eventually(t, 10*time.Second, "bob creates for alice with CREATE_TOKENS", func() bool {
		forAlice, err = bob.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Owner: &aliceP})
		return err == nil
	})
	if forAlice.Owner != aliceP || forAlice.TokenRequesterPrincipal != (kadm.Principal{Type: "User", Name: "bob"}) {
		t.Fatalf("bob's token for alice: %+v", forAlice)
	}

	// Renew extends, capped by the request; describe shows it.
	exp, err := alice.RenewDelegationToken(ctx, tok.HMAC, 2*time.Hour)
	if err != nil || exp.Before(time.Now().Add(time.Hour)) || exp.After(time.Now().Add(3*time.Hour)) {
		t.Fatalf("renew: %v, %v", exp, err)
	}
	eventually(t, 10*time.Second, "alice describes her two tokens, renewed", func() bool {
		ts, err := alice.DescribeDelegationTokens(ctx)
		return err == nil && len(ts) == 2 && (ts[0].ExpiryTimestamp.Equal(exp) || ts[1].ExpiryTimestamp.Equal(exp))
	})

	// A node restarted from a snapshot still accepts the token.
	eventually(t, 30*time.Second, "a metadata snapshot", func() bool {
		m, _ := filepath.Glob(filepath.Join(c.DataDir(2), "*", "snapshots", "*", "meta.json"))
		m2, _ := filepath.Glob(filepath.Join(c.DataDir(2), "*", "*", "snapshots", "*", "meta.json"))
		return len(m)+len(m2) > 0
	})
	c.StopNode(2)
	c.StartNode(2)
	c.WaitReady()
	after := plainSASLClient(t, []string{nodeAddr(t, c, 2, "SASL_PLAINTEXT")}, tokenAuth(tok).AsSha512Mechanism())
	if err := metadataVia(ctx, after); err != nil {
		t.Fatalf("token login after a restart: %v", err)
	}

	// Expire at once: logins fail, and the leader's check removes it.
	if _, err := alice.ExpireDelegationToken(ctx, tok.HMAC, 0); err != nil {
		t.Fatalf("expire: %v", err)
	}
	for id := 1; id <= 2; id++ {
		eventually(t, 10*time.Second, "the expired token's login refused", func() bool {
			cl := plainSASLClient(t, []string{nodeAddr(t, c, id, "SASL_PLAINTEXT")}, tokenAuth(tok).AsSha256Mechanism(), kgo.RequestRetries(0))
			defer cl.Close()
			return errors.Is(metadataVia(ctx, cl), kerr.SaslAuthenticationFailed)
		})
	}
	eventually(t, 20*time.Second, "the expired token removed", func() bool {
		ts, err := alice.DescribeDelegationTokens(ctx)
		return err == nil && len(ts) == 1 && ts[0].TokenID == forAlice.TokenID
	})
	if _, err := alice.RenewDelegationToken(ctx, tok.HMAC, time.Hour); !errors.Is(err, kerr.DelegationTokenNotFound) {
		t.Fatalf("renew a removed token: %v", err)
	}
	// A negative period removes a token at once.
	if _, err := alice.ExpireDelegationToken(ctx, forAlice.HMAC, -time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// (Describe may go to the other node, whose copy of the metadata
	// catches up shortly.)
	eventually(t, 10*time.Second, "the token expired with a negative period removed", func() bool {
		ts, err := alice.DescribeDelegationTokens(ctx)
		return err == nil && len(ts) == 0
	})
}

// Tokens need both the secret and a SASL listener; the secret's absence
// is not a configuration error.
func TestDelegationTokensNeedSecretAndSASL(t *testing.T) {
	t.Parallel()
	sasl := []broker.ListenerConfig{{Name: "PLAINTEXT", Addr: "127.0.0.1:0"}, {Name: "SASL_PLAINTEXT", Addr: "127.0.0.1:0"}}
	for _, tc := range []struct {
		secret    string
		listeners []broker.ListenerConfig
		want      bool
	}{
		{"s", sasl, true},
		{"", sasl, false},
		{"s", sasl[:1], false},
	} {
		c := broker.DefaultConfig()
		c.DataDir = t.TempDir()
		c.Listeners, c.DelegationTokens.SecretKey = tc.listeners, tc.secret
		c.Security.RaftAllowUnauthenticated = true
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		if got := broker.TokensEnabled(&c); got != tc.want {
			t.Errorf("secret %q, %d listeners: enabled %v, want %v", tc.secret, len(tc.listeners), got, tc.want)
		}
	}
	c := broker.DefaultConfig()
	c.DelegationTokens.ExpiryTimeMs = 0
	var ce *broker.ConfigError
	if err := c.Validate(); !errors.As(err, &ce) || ce.Key != "delegation_token_expiry_time_ms" {
		t.Fatalf("delegation_token_expiry_time_ms 0: %v", err)
	}
}
