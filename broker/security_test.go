package broker_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/scram"
	"github.com/minikafka/minikafka-go/internal/testcert"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/metadata"
)

// secureCluster starts n nodes with a PLAINTEXT and a SASL_SSL listener
// and the SASL user admin/admin-secret, and returns the client TLS config.
func secureCluster(t *testing.T, n int, opts ...testcluster.Option) (*testcluster.Cluster, *tls.Config) {
	t.Helper()
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cliTLS, err := files.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]testcluster.Option{func(c *broker.Config) {
		c.Listeners = []broker.ListenerConfig{
			{Name: "PLAINTEXT", Addr: "127.0.0.1:0"},
			{Name: "SASL_SSL", Addr: "127.0.0.1:0", TLSCertFile: files.Cert, TLSKeyFile: files.Key},
		}
		c.SASLUsers = []broker.SASLUser{{Name: "admin", Password: "admin-secret"}}
		c.Security.RaftAllowUnauthenticated = true // these tests are about the Kafka side
	}}, opts...)
	return testcluster.Start(t, n, opts...), cliTLS
}

// listenerAddrs returns each running node's bound address of a listener.
func listenerAddrs(c *testcluster.Cluster, name string) []string {
	var out []string
	for _, nd := range c.Running() {
		for _, l := range nd.Listeners() {
			if l.Name == name {
				out = append(out, l.Addr)
			}
		}
	}
	return out
}

func saslClient(t *testing.T, seeds []string, tlsCfg *tls.Config, m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(tlsCfg.Clone()), kgo.SASL(m)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// waitForUser waits until every running node can authenticate user with
// a SCRAM-SHA-512 metadata request over SASL_SSL.
//
// It logs in only once every node's metadata holds the credential: a login
// before that fails, and failures spend the address's allowance
// (MaxFailedAuthenticationsPerIP), which a test may have set low.
func waitForUser(t *testing.T, c *testcluster.Cluster, tlsCfg *tls.Config, user, pass string) {
	t.Helper()
	for _, nd := range c.Running() {
		eventually(t, 30*time.Second, "credential of "+user+" in the metadata", func() bool {
			_, ok := nd.MetadataState().ScramCredential(user, metadata.ScramSHA512)
			return ok
		})
	}
	for _, addr := range listenerAddrs(c, "SASL_SSL") {
		eventually(t, 20*time.Second, "user "+user+" on "+addr, func() bool {
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(tlsCfg.Clone()),
				kgo.SASL(kscram.Auth{User: user, Pass: pass}.AsSha512Mechanism()), kgo.RequestRetries(0))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			// Generous: an exchange given up half way keeps its token.
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			return err == nil
		})
	}
}

// Two listeners at once: each advertises its own listener's addresses in
// Metadata. franz-go produces and consumes over SASL_SSL with
// SCRAM-SHA-512 and SCRAM-SHA-256 through either node (the credentials
// are in the replicated metadata); a wrong password is
// SASL_AUTHENTICATION_FAILED.
func TestSASLSSLWithFranzGo(t *testing.T) {
	t.Parallel()
	c, tlsCfg := secureCluster(t, 2)
	waitForUser(t, c, tlsCfg, "admin", "admin-secret")

	plainAddrs, saslAddrs := listenerAddrs(c, "PLAINTEXT"), listenerAddrs(c, "SASL_SSL")
	brokersVia := func(cl *kgo.Client) map[string]bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, b := range resp.Brokers {
			got[net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))] = true
		}
		return got
	}
	admin := saslClient(t, saslAddrs, tlsCfg, kscram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism())
	plain := c.Client(t, kgo.SeedBrokers(plainAddrs...))
	for name, tc := range map[string]struct {
		cl   *kgo.Client
		want []string
	}{"PLAINTEXT": {plain, plainAddrs}, "SASL_SSL": {admin, saslAddrs}} {
		got := brokersVia(tc.cl)
		if len(got) != len(tc.want) {
			t.Fatalf("%s metadata lists %v, want %v", name, got, tc.want)
		}
		for _, a := range tc.want {
			if !got[a] {
				t.Fatalf("%s metadata lists %v, want %v", name, got, tc.want)
			}
		}
	}

	createTopic(t, admin, "secure", 2, 2)
	for _, m := range []sasl.Mechanism{
		kscram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism(),
		kscram.Auth{User: "admin", Pass: "admin-secret"}.AsSha256Mechanism(),
	} {
		p := saslClient(t, saslAddrs, tlsCfg, m, kgo.DefaultProduceTopic("secure"))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := p.ProduceSync(ctx, values(5, m.Name())...).FirstErr(); err != nil {
			t.Fatalf("%s produce: %v", m.Name(), err)
		}
		cancel()
	}
	cons := saslClient(t, saslAddrs, tlsCfg, kscram.Auth{User: "admin", Pass: "admin-secret"}.AsSha256Mechanism(),
		kgo.ConsumeTopics("secure"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for got < 10 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 10: %v", got, err)
		}
		got += fs.NumRecords()
	}

	bad := saslClient(t, saslAddrs[:1], tlsCfg, kscram.Auth{User: "admin", Pass: "wrong"}.AsSha512Mechanism(), kgo.RequestRetries(0))
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, bad); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// Users are managed with AlterUserScramCredentials and
// DescribeUserScramCredentials, with Kafka's error codes.
func TestScramCredentialAdmin(t *testing.T) {
	t.Parallel()
	c, tlsCfg := secureCluster(t, 1)
	waitForUser(t, c, tlsCfg, "admin", "admin-secret")
	admin := saslClient(t, listenerAddrs(c, "SASL_SSL"), tlsCfg, kscram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	upsert := func(user string, mech int8, iterations int32, pass string) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations = user, mech, iterations
		u.Salt = scram.NewSalt()
		m := scram.Mechanism(mech)
		if !m.Valid() {
			m = scram.SHA256
		}
		u.SaltedPassword, _ = scram.SaltedPassword(m, pass, u.Salt, max(int(iterations), 1))
		return u
	}
	del := func(user string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = user, mech
		return d
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		upsert("bob", 1, 8192, "bob-secret"),
		upsert("carol", 1, 1000, "x"), // too few iterations
		upsert("dave", 1, 20000, "x"), // too many
		upsert("erin", 3, 4096, "x"),  // unknown mechanism
		upsert("frank", 2, 4096, "x"), // and deleted below: duplicate
	}
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("frank", 2), del("gina", 1)}
	resp, err := req.RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*kerr.Error{
		"bob": nil, "carol": kerr.UnacceptableCredential, "dave": kerr.UnacceptableCredential,
		"erin": kerr.UnsupportedSaslMechanism, "frank": kerr.DuplicateResource, "gina": kerr.ResourceNotFound,
	}
	if len(resp.Results) != len(want) {
		t.Fatalf("results %+v", resp.Results)
	}
	for _, r := range resp.Results {
		w, ok := want[r.User]
		if !ok || (w == nil && r.ErrorCode != 0) || (w != nil && r.ErrorCode != w.Code) {
			t.Errorf("%s: error %d, want %v", r.User, r.ErrorCode, w)
		}
	}

	// bob can authenticate with SCRAM-SHA-256, on any listener's node.
	bob := saslClient(t, listenerAddrs(c, "SASL_SSL"), tlsCfg, kscram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism())
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, bob); err != nil {
		t.Fatalf("bob: %v", err)
	}

	describe := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	dresp, err := describe.RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	users := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	for _, r := range dresp.Results {
		users[r.User] = r.CredentialInfos
	}
	if len(users) != 2 || len(users["admin"]) != 2 || len(users["bob"]) != 1 || users["bob"][0].Iterations != 8192 {
		t.Fatalf("describe all: %+v", dresp.Results)
	}
	for _, name := range []string{"nobody", "bob", "bob"} {
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = name
		describe.Users = append(describe.Users, u)
	}
	dresp, err = describe.RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	if len(dresp.Results) != 2 || dresp.Results[0].ErrorCode != kerr.ResourceNotFound.Code || dresp.Results[1].ErrorCode != kerr.DuplicateResource.Code {
		t.Fatalf("describe named: %+v", dresp.Results)
	}

	// Deleting bob's credential ends his logins.
	req = kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("bob", 1)}
	if resp, err := req.RequestWith(ctx, admin); err != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("delete bob: %+v, %v", resp, err)
	}
	bob2 := saslClient(t, listenerAddrs(c, "SASL_SSL"), tlsCfg, kscram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism(), kgo.RequestRetries(0))
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, bob2); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("deleted bob: %v", err)
	}
}

// Credentials survive a metadata snapshot and a node restart from it.
func TestScramCredentialsSurviveRestart(t *testing.T) {
	t.Parallel()
	c, tlsCfg := secureCluster(t, 1, func(cfg *broker.Config) {
		cfg.MetaRaft.SnapshotThreshold = 1
		cfg.MetaRaft.SnapshotInterval = 50 * time.Millisecond
	})
	waitForUser(t, c, tlsCfg, "admin", "admin-secret")
	eventually(t, 30*time.Second, "a metadata snapshot", func() bool {
		m, _ := filepath.Glob(filepath.Join(c.DataDir(1), "*", "snapshots", "*", "meta.json"))
		m2, _ := filepath.Glob(filepath.Join(c.DataDir(1), "*", "*", "snapshots", "*", "meta.json"))
		return len(m)+len(m2) > 0
	})
	c.StopNode(1)
	// Without sasl_users, so the user can only come from the restored state.
	c.Configure(1, func(cfg *broker.Config) { cfg.SASLUsers = nil })
	c.StartNode(1)
	c.WaitReady()
	waitForUser(t, c, tlsCfg, "admin", "admin-secret")
}

// An SSL listener with client_auth required serves a client that shows a
// certificate signed by tls_ca_file, and no other.
func TestSSLClientAuthRequired(t *testing.T) {
	t.Parallel()
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		cfg.Listeners = []broker.ListenerConfig{{Name: "SSL", Addr: "127.0.0.1:0", TLSCertFile: files.Cert, TLSKeyFile: files.Key,
			TLSCAFile: files.CA, ClientAuth: broker.ClientAuthRequired}}
	})
	ping := func(withCert bool) error {
		cfg, err := files.ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		if withCert {
			cert, err := tls.LoadX509KeyPair(files.ClientCert, files.ClientKey)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.DialTLSConfig(cfg), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	if err := ping(true); err != nil {
		t.Fatalf("with a client certificate: %v", err)
	}
	if err := ping(false); err == nil {
		t.Fatal("served a client without a certificate")
	}
}

// A node applies max_failed_authentications_per_ip: past two failures from
// one IP (PLAIN), even the right password is refused from it (SCRAM), while
// another IP logs in.
func TestFailedAuthenticationsPerIP(t *testing.T) {
	t.Parallel()
	c, tlsCfg := secureCluster(t, 1, func(c *broker.Config) {
		c.MaxFailedAuthenticationsPerIP, c.FailedAuthenticationsWindow = 2, time.Hour
		c.ConnectionFailedAuthenticationDelay = 0 // none
	})
	waitForUser(t, c, tlsCfg, "admin", "admin-secret")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	login := func(from string, m sasl.Mechanism) error {
		d := &tls.Dialer{NetDialer: &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}, Config: tlsCfg.Clone()}
		cl, err := kgo.NewClient(kgo.SeedBrokers(listenerAddrs(c, "SASL_SSL")...), kgo.Dialer(d.DialContext),
			kgo.SASL(m), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	const attacker = "127.0.0.2"
	for range 2 {
		if err := login(attacker, plain.Auth{User: "admin", Pass: "wrong"}.AsMechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
	}
	// Answered when the IP may try again, at most 5 s later.
	right := kscram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism()
	if err := login(attacker, right); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("the right password over the limit: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if err := login("127.0.0.3", right); err != nil {
		t.Fatalf("the right password from another IP: %v", err)
	}
}

// waitForUser spends none of an address's allowance of failures while
// the user is still being created (a CI run once failed so: its logins
// before the credential existed locked 127.0.0.1 out).
func TestWaitForUserBeforeTheCredential(t *testing.T) {
	t.Parallel()
	c, tlsCfg := secureCluster(t, 1, func(c *broker.Config) {
		c.MaxFailedAuthenticationsPerIP, c.FailedAuthenticationsWindow = 2, time.Hour
		c.ConnectionFailedAuthenticationDelay = 0 // none
	})
	waitForUser(t, c, tlsCfg, "admin", "admin-secret")
	admin := saslClient(t, listenerAddrs(c, "SASL_SSL"), tlsCfg, kscram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism())
	created := make(chan error, 1)
	go func() {
		time.Sleep(time.Second) // waitForUser is waiting by now
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt = "late", int8(scram.SHA512), 4096, scram.NewSalt()
		u.SaltedPassword, _ = scram.SaltedPassword(scram.SHA512, "late-secret", u.Salt, 4096)
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		req.Upsertions = append(req.Upsertions, u)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, admin)
		if err == nil {
			err = kerr.ErrorForCode(resp.Results[0].ErrorCode)
		}
		created <- err
	}()
	waitForUser(t, c, tlsCfg, "late", "late-secret")
	if err := <-created; err != nil {
		t.Fatalf("creating the user: %v", err)
	}
}
