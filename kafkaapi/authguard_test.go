package kafkaapi

import (
	"bufio"
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"
)

// dialFrom opens a raw-protocol client whose connection leaves from the
// loopback address ip (any of 127.0.0.0/8 on Linux), so that one test
// can play clients of several IPs.
func (h *harness) dialFrom(ip string) *client {
	h.t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	nc, err := d.Dial("tcp", h.addr)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { nc.Close() })
	return &client{t: h.t, nc: nc, br: bufio.NewReader(nc)}
}

// plainLogin authenticates with PLAIN on a new connection from ip and
// returns SaslAuthenticate's error code and how long its answer took.
func plainLogin(h *harness, ip, user, pass string) (int16, time.Duration) {
	h.t.Helper()
	c := h.dialFrom(ip)
	defer c.nc.Close()
	if r := c.roundTrip(saslHandshake(MechanismPlain)).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		h.t.Fatalf("handshake: %d", r.ErrorCode)
	}
	start := time.Now()
	r := c.roundTrip(saslAuthenticate(1, []byte("\x00"+user+"\x00"+pass))).(*kmsg.SASLAuthenticateResponse)
	return r.ErrorCode, time.Since(start)
}

// scramLogin runs franz-go's SCRAM-SHA-512 client over a raw connection
// from ip and returns the error code of the first SaslAuthenticate that
// failed (0 when it authenticated).
func scramLogin(h *harness, ip, user, pass string) int16 {
	h.t.Helper()
	c := h.dialFrom(ip)
	defer c.nc.Close()
	c.roundTrip(saslHandshake(MechanismScramSHA512))
	sess, msg, err := kscram.Auth{User: user, Pass: pass}.AsSha512Mechanism().Authenticate(context.Background(), h.addr)
	if err != nil {
		h.t.Fatal(err)
	}
	for {
		r := c.roundTrip(saslAuthenticate(1, msg)).(*kmsg.SASLAuthenticateResponse)
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		done, next, err := sess.Challenge(r.SASLAuthBytes)
		if err != nil {
			h.t.Fatalf("client refused the server's message: %v", err)
		}
		if done {
			return 0
		}
		msg = next
	}
}

// A failed authentication is answered, and its connection closed, only
// after connection.failed.authentication.delay.ms (100 ms by default), as
// in Kafka, whatever the mechanism; a success is not delayed.
func TestSASLFailureIsDelayed(t *testing.T) {
	const delay = 100 * time.Millisecond // Kafka's default
	h := startListener(t, Config{}, Listener{SASLMechanisms: allMechanisms})
	for _, pass := range []string{"wrong", "alice-secret"} {
		code, took := plainLogin(h, "127.0.0.1", "alice", pass)
		switch {
		case pass == "wrong" && (code != kerr.SaslAuthenticationFailed.Code || took < delay):
			t.Fatalf("wrong PLAIN password answered %d after %v, want SASL_AUTHENTICATION_FAILED after %v", code, took, delay)
		case pass != "wrong" && code != 0:
			t.Fatalf("right PLAIN password answered %d", code)
		}
	}
	c := h.dial()
	c.roundTrip(saslHandshake(MechanismScramSHA512))
	start := time.Now()
	r := c.roundTrip(saslAuthenticate(1, []byte("n,,n=alice,r=abc"))).(*kmsg.SASLAuthenticateResponse)
	if r.ErrorCode != 0 {
		t.Fatalf("SCRAM first message: %d", r.ErrorCode)
	}
	r = c.roundTrip(saslAuthenticate(1, []byte("c=biws,r=bad,p=AAAA"))).(*kmsg.SASLAuthenticateResponse)
	if took := time.Since(start); r.ErrorCode != kerr.SaslAuthenticationFailed.Code || took < delay {
		t.Fatalf("bad SCRAM final message answered %d after %v, want SASL_AUTHENTICATION_FAILED after %v", r.ErrorCode, took, delay)
	}
	c.requireClosed()
}

// Past max_failed_authentications_per_ip failures from one IP, its SASL
// attempts are refused, the right password too, while other IPs still
// authenticate. (The window is long, so that nothing refills during the
// test however slow it runs.)
func TestSASLFailedAuthenticationsPerIP(t *testing.T) {
	const limit = 5
	h := startListener(t, Config{MaxFailedAuthenticationsPerIP: limit, FailedAuthenticationsWindow: time.Hour,
		AuthenticationTimeout: 2 * time.Second}, Listener{SASLMechanisms: allMechanisms})
	const attacker, other = "127.0.0.2", "127.0.0.1"
	failures := 0
	for ; failures < 200; failures++ {
		if code, _ := plainLogin(h, attacker, "alice", "alice-secret"); code != 0 {
			if code != kerr.SaslAuthenticationFailed.Code {
				t.Fatalf("refused with %d, want SASL_AUTHENTICATION_FAILED", code)
			}
			break
		}
		if code, _ := plainLogin(h, attacker, "alice", "guess"); code != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("wrong password: %d", code)
		}
	}
	if failures != limit {
		t.Fatalf("the right password from %s was refused after %d failed logins, want %d", attacker, failures, limit)
	}
	if code := scramLogin(h, attacker, "alice", "alice-secret"); code != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("SCRAM from %s over the limit: %d, want SASL_AUTHENTICATION_FAILED", attacker, code)
	}
	if code, _ := plainLogin(h, other, "alice", "alice-secret"); code != 0 {
		t.Fatalf("PLAIN from %s: %d", other, code)
	}
	if code := scramLogin(h, other, "alice", "alice-secret"); code != 0 {
		t.Fatalf("SCRAM from %s: %d", other, code)
	}
}

// An attempt over the limit costs no key derivation, and a PLAIN password
// proven right costs none the next time; wrong ones always do.
func TestSASLWorkPerAttempt(t *testing.T) {
	// A refusal's answer waits for the next token, up to half the
	// authentication timeout.
	h := startListener(t, Config{MaxFailedAuthenticationsPerIP: 2, FailedAuthenticationsWindow: time.Hour,
		FailedAuthenticationDelay: -1, AuthenticationTimeout: time.Second}, Listener{SASLMechanisms: allMechanisms})
	const attacker, other = "127.0.0.2", "127.0.0.1"
	want := AuthStats{}
	check := func(step string) {
		t.Helper()
		if got := h.srv.AuthStats(); got != want {
			t.Fatalf("%s: %+v, want %+v", step, got, want)
		}
	}
	for range 2 {
		if code, _ := plainLogin(h, attacker, "alice", "guess"); code != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("wrong password: %d", code)
		}
		want.Failed++
		want.Derivations++
	}
	check("two wrong passwords")
	for range 3 {
		code, took := plainLogin(h, attacker, "nobody", "guess")
		if code != kerr.SaslAuthenticationFailed.Code || took < 500*time.Millisecond {
			t.Fatalf("over the limit: %d after %v, want SASL_AUTHENTICATION_FAILED after 500ms", code, took)
		}
		want.Failed++
		want.Refused++
	}
	check("three attempts over the limit")
	for range 3 {
		if code, _ := plainLogin(h, other, "alice", "alice-secret"); code != 0 {
			t.Fatalf("right password from %s: %d", other, code)
		}
		want.Succeeded++
	}
	want.Derivations++ // the first only
	check("the right password three times")
	if code, _ := plainLogin(h, other, "nobody", "guess"); code != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("unknown user: %d", code)
	}
	want.Failed++
	want.Derivations++ // as much work as a wrong password
	check("an unknown user")
}

// The limiter refills an address's allowance evenly over the window,
// tells a refused attempt when the next token comes, counts an IPv6 /64 as one address, and keeps at most maxTrackedAddrs
// addresses, the rest sharing one allowance.
func TestFailureLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newFailureLimiter(2, time.Minute, func() time.Time { return now })
	fail := func(host string) bool {
		_, ok, _ := l.take(host)
		return ok
	}
	if !fail("10.0.0.1") || !fail("10.0.0.1") {
		t.Fatal("two failures refused")
	}
	if _, ok, wait := l.take("10.0.0.1"); ok || wait != 30*time.Second {
		t.Fatalf("third failure: %v, wait %v; want a refusal until a token is back in 30s", ok, wait)
	}
	now = now.Add(30 * time.Second) // one token back
	if !fail("10.0.0.1") || fail("10.0.0.1") {
		t.Fatal("one token after half the window expected")
	}
	tk, ok, _ := l.take("10.0.0.2")
	if !ok {
		t.Fatal("another address refused")
	}
	l.giveBack(tk) // a success
	if !fail("10.0.0.2") || !fail("10.0.0.2") || fail("10.0.0.2") {
		t.Fatal("a success used the allowance")
	}
	if !fail("2001:db8::1") || !fail("2001:db8::2") || fail("2001:db8::3") || !fail("2001:db8:0:1::1") {
		t.Fatal("IPv6 addresses not counted by /64")
	}
	if !fail("::ffff:10.0.0.3") || !fail("10.0.0.3") || fail("10.0.0.3") {
		t.Fatal("an IPv4-mapped address counted apart from its IPv4 one")
	}

	for i := len(l.buckets); i < maxTrackedAddrs; i++ {
		fail(netip.AddrFrom4([4]byte{11, byte(i >> 16), byte(i >> 8), byte(i)}).String())
	}
	// Full: a new address shares the overflow allowance.
	if !fail("12.0.0.1") || !fail("12.0.0.2") || fail("12.0.0.3") || len(l.buckets) != maxTrackedAddrs {
		t.Fatalf("past the table (%d addresses), new ones should share one allowance", len(l.buckets))
	}
	// Once the buckets are full again, they are dropped to make room.
	now = now.Add(time.Minute)
	if !fail("12.0.0.4") || len(l.buckets) > 10 {
		t.Fatalf("after a window, %d addresses still tracked", len(l.buckets))
	}
}
