package kafkaapi

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minikafka/minikafka-go/internal/scram"
	"github.com/minikafka/minikafka-go/internal/testcert"
	"github.com/minikafka/minikafka-go/logging"
)

// credBackend adds stored SCRAM credentials to the fake backend.
type credBackend struct {
	*fakeBackend
	creds map[scram.Mechanism]map[string]scram.Credential // read-only after start
}

func (b credBackend) ScramCredential(user string, m scram.Mechanism) (scram.Credential, bool) {
	c, ok := b.creds[m][user]
	return c, ok
}

// startListener serves a fake backend with user "alice" (password
// "alice-secret", both SCRAM mechanisms) on one listener.
func startListener(t *testing.T, cfg Config, lc Listener) *harness {
	t.Helper()
	return startListenerWith(t, cfg, lc, func(b credBackend) Backend { return b })
}

// startListenerWith is startListener serving what wrap makes of the
// backend.
func startListenerWith(t *testing.T, cfg Config, lc Listener, wrap func(credBackend) Backend) *harness {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := int32(l.Addr().(*net.TCPAddr).Port)
	fb := newFakeBackend("127.0.0.1", port)
	fb.broker.Endpoints = []Endpoint{{Listener: lc.Name, Host: "127.0.0.1", Port: port}}
	cb := credBackend{fakeBackend: fb, creds: map[scram.Mechanism]map[string]scram.Credential{}}
	for _, m := range []scram.Mechanism{scram.SHA256, scram.SHA512} {
		c, err := scram.NewCredential(m, "alice-secret", scram.DefaultIterations)
		if err != nil {
			t.Fatal(err)
		}
		cb.creds[m] = map[string]scram.Credential{"alice": c}
	}
	cfg.Logger = logging.Discard()
	srv, err := New(wrap(cb), cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeListener(context.Background(), l, lc) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeListener returned %v", err)
		}
	})
	return &harness{t: t, srv: srv, fb: fb, addr: l.Addr().String()}
}

func tlsConfigs(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	f, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if server, err = f.ServerConfig(); err != nil {
		t.Fatal(err)
	}
	if client, err = f.ClientConfig(); err != nil {
		t.Fatal(err)
	}
	return server, client
}

var allMechanisms = []string{MechanismPlain, MechanismScramSHA256, MechanismScramSHA512}

// franz-go authenticates over SASL_SSL with each mechanism and then gets
// Metadata; a wrong password fails with SASL_AUTHENTICATION_FAILED.
func TestKgoSASLSSL(t *testing.T) {
	srvTLS, cliTLS := tlsConfigs(t)
	h := startListener(t, Config{}, Listener{Name: "SASL_SSL", TLS: srvTLS, SASLMechanisms: allMechanisms})
	h.fb.addTopic("events", 1)
	mechs := func(pass string) map[string]sasl.Mechanism {
		return map[string]sasl.Mechanism{
			"PLAIN":         plain.Auth{User: "alice", Pass: pass}.AsMechanism(),
			"SCRAM-SHA-256": kscram.Auth{User: "alice", Pass: pass}.AsSha256Mechanism(),
			"SCRAM-SHA-512": kscram.Auth{User: "alice", Pass: pass}.AsSha512Mechanism(),
		}
	}
	metadata := func(m sasl.Mechanism) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(h.addr), kgo.DialTLSConfig(cliTLS.Clone()), kgo.SASL(m),
			kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		defer cancel()
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	for name, m := range mechs("alice-secret") {
		if err := metadata(m); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, m := range mechs("wrong") {
		if err := metadata(m); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}
}

// dialTLS opens a raw-protocol client over TLS.
func (h *harness) dialTLS(cfg *tls.Config) *client {
	h.t.Helper()
	nc, err := tls.Dial("tcp", h.addr, cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { nc.Close() })
	return &client{t: h.t, nc: nc, br: bufio.NewReader(nc)}
}

func saslHandshake(mech string) *kmsg.SASLHandshakeRequest {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version = 1
	req.Mechanism = mech
	return req
}

func saslAuthenticate(version int16, b []byte) *kmsg.SASLAuthenticateRequest {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version = version
	req.SASLAuthBytes = b
	return req
}

// A wrong password is answered SASL_AUTHENTICATION_FAILED and the
// connection closes; so does an unknown mechanism (after its answer) and
// any request but ApiVersions before authentication.
func TestSASLRefusals(t *testing.T) {
	h := startListener(t, Config{}, Listener{Name: "SASL_PLAINTEXT", SASLMechanisms: []string{MechanismPlain, MechanismScramSHA512}})

	c := h.dial()
	if r := c.roundTrip(apiVersionsRequest(3)).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
		t.Fatalf("ApiVersions before authentication: %d", r.ErrorCode)
	}
	if r := c.roundTrip(saslHandshake("PLAIN")).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("handshake: %d", r.ErrorCode)
	}
	r := c.roundTrip(saslAuthenticate(2, []byte("\x00alice\x00nope"))).(*kmsg.SASLAuthenticateResponse)
	if r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("wrong password: error %d", r.ErrorCode)
	}
	c.requireClosed()

	c = h.dial()
	r2 := c.roundTrip(saslHandshake("GSSAPI")).(*kmsg.SASLHandshakeResponse)
	if r2.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(r2.SupportedMechanisms) != 2 {
		t.Fatalf("unknown mechanism: %+v", r2)
	}
	c.requireClosed()

	c = h.dial()
	c.send(kmsg.NewPtrMetadataRequest())
	c.requireClosed()

	// SaslHandshake v0 (unframed tokens) is refused.
	c = h.dial()
	v0 := saslHandshake("PLAIN")
	v0.Version = 0
	if r := c.roundTrip(v0).(*kmsg.SASLHandshakeResponse); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("handshake v0: %d", r.ErrorCode)
	}
	c.requireClosed()

	// The right password authenticates, and then Metadata is served.
	c = h.dial()
	c.roundTrip(saslHandshake("PLAIN"))
	if r := c.roundTrip(saslAuthenticate(0, []byte("\x00alice\x00alice-secret"))).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 {
		t.Fatalf("right password: %d", r.ErrorCode)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	if r := c.roundTrip(md).(*kmsg.MetadataResponse); len(r.Brokers) != 1 {
		t.Fatalf("metadata after authentication: %+v", r)
	}
	// A second handshake is ILLEGAL_SASL_STATE (no re-authentication).
	if r := c.roundTrip(saslHandshake("PLAIN")).(*kmsg.SASLHandshakeResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake after authentication: %d", r.ErrorCode)
	}
}

// A connection that does not authenticate within AuthenticationTimeout is
// closed; an oversized frame before authentication closes it at once.
func TestSASLBounds(t *testing.T) {
	h := startListener(t, Config{AuthenticationTimeout: 200 * time.Millisecond}, Listener{SASLMechanisms: allMechanisms})
	c := h.dial()
	c.requireClosed()

	c = h.dial()
	c.write(frameWith(maxSASLFrame+1, nil))
	c.requireClosed()
}

// Plaintext Kafka bytes sent to a TLS listener get no answer: the
// connection closes without a byte back.
func TestPlaintextToTLSListener(t *testing.T) {
	srvTLS, cliTLS := tlsConfigs(t)
	h := startListener(t, Config{}, Listener{Name: "SSL", TLS: srvTLS})
	c := h.dial()
	c.send(apiVersionsRequest(3))
	c.nc.SetReadDeadline(time.Now().Add(failsafe))
	b, err := io.ReadAll(c.nc)
	if len(b) != 0 {
		t.Fatalf("got %d bytes back: %q", len(b), b)
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatal("connection still open")
	}
	// TLS clients are served.
	tc := h.dialTLS(cliTLS)
	if r := tc.roundTrip(apiVersionsRequest(3)).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
		t.Fatalf("ApiVersions over TLS: %d", r.ErrorCode)
	}
}

// Metadata through a named listener advertises each broker's endpoint of
// that name and leaves out brokers without one.
func TestMetadataByListener(t *testing.T) {
	h := startListener(t, Config{}, Listener{Name: "EXTERNAL"})
	h.fb.set(func(b *fakeBackend) {
		b.broker.Endpoints = []Endpoint{{Listener: "EXTERNAL", Host: "ext.example", Port: 19092}}
	})
	c := h.dial()
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	r := c.roundTrip(md).(*kmsg.MetadataResponse)
	if len(r.Brokers) != 1 || r.Brokers[0].Host != "ext.example" || r.Brokers[0].Port != 19092 {
		t.Fatalf("brokers %+v", r.Brokers)
	}
	h.fb.set(func(b *fakeBackend) { b.broker.Endpoints = nil })
	if r := c.roundTrip(md).(*kmsg.MetadataResponse); len(r.Brokers) != 0 {
		t.Fatalf("a broker without the listener is listed: %+v", r.Brokers)
	}
}
