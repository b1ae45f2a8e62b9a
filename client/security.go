package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// SASL mechanisms for the SASL option.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// TLS makes every connection a TLS client connection with cfg (a nil cfg
// means the system's roots). The server name defaults to the broker's
// host. Default: plaintext.
func TLS(cfg *tls.Config) Opt {
	return mk("TLS", anyOpt, func(c *config) {
		if cfg == nil {
			cfg = &tls.Config{}
		}
		c.tls = cfg.Clone()
	})
}

// TLSCAFile makes every connection TLS, trusting the PEM certificates in
// path (instead of the system's roots). It may be combined with TLS, whose
// config it then adds the roots to.
func TLSCAFile(path string) Opt {
	return mk("TLSCAFile", anyOpt, func(c *config) { c.tlsCAFile = path })
}

// SASL authenticates every connection with mechanism (SASLPlain,
// SASLScramSHA256 or SASLScramSHA512), user and password, after
// ApiVersions, with SaslHandshake v1 and SaslAuthenticate. A wrong
// password fails requests with a *KafkaError of code
// SASL_AUTHENTICATION_FAILED, which is not retriable. Use it with TLS:
// PLAIN sends the password as it is. Default: none.
func SASL(mechanism, user, password string) Opt {
	return mk("SASL", anyOpt, func(c *config) {
		c.saslMechanism, c.saslUser, c.saslPassword = mechanism, user, password
	})
}

// validateSecurity builds the TLS dialer and the SASL mechanism.
func (c *config) validateSecurity() error {
	if c.tls != nil || c.tlsCAFile != "" {
		cfg := c.tls
		if cfg == nil {
			cfg = &tls.Config{}
		}
		if c.tlsCAFile != "" {
			pemBytes, err := os.ReadFile(c.tlsCAFile)
			if err != nil {
				return &ConfigError{Option: "TLSCAFile", Err: err}
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pemBytes) {
				return &ConfigError{Option: "TLSCAFile", Err: fmt.Errorf("%s holds no PEM certificate", c.tlsCAFile)}
			}
			cfg = cfg.Clone()
			cfg.RootCAs = pool
		}
		c.dialer = tlsDialer(c.dialer, cfg)
	}
	if c.saslMechanism == "" {
		return nil
	}
	if c.saslUser == "" {
		return &ConfigError{Option: "SASL", Err: fmt.Errorf("no user")}
	}
	switch c.saslMechanism {
	case SASLPlain:
		c.sasl = plain.Auth{User: c.saslUser, Pass: c.saslPassword}.AsMechanism()
	case SASLScramSHA256:
		c.sasl = scram.Auth{User: c.saslUser, Pass: c.saslPassword}.AsSha256Mechanism()
	case SASLScramSHA512:
		c.sasl = scram.Auth{User: c.saslUser, Pass: c.saslPassword}.AsSha512Mechanism()
	default:
		return &ConfigError{Option: "SASL", Err: fmt.Errorf("mechanism %q: want %s, %s or %s", c.saslMechanism, SASLPlain, SASLScramSHA256, SASLScramSHA512)}
	}
	return nil
}

// tlsDialer wraps base so that it returns TLS connections whose handshake
// has finished.
func tlsDialer(base DialFunc, cfg *tls.Config) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := base(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := cfg
		if c.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			c = cfg.Clone()
			c.ServerName = host
		}
		tc := tls.Client(nc, c)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		return tc, nil
	}
}

// authenticate runs SaslHandshake v1 and SaslAuthenticate on a fresh
// connection, before any other request, within the request timeout.
func (c *conn) authenticate(nc net.Conn, vers map[int16][2]int16) error {
	nc.SetDeadline(time.Now().Add(c.cfg.requestTimeout))
	defer nc.SetDeadline(time.Time{})
	mech := c.cfg.sasl
	if v, ok := vers[17]; !ok || v[0] > 1 || v[1] < 1 {
		return &VersionError{Key: 17, BrokerMax: v[1], ClientRange: [2]int16{1, 1}}
	}
	authVersion := int16(-1)
	if v, ok := vers[36]; ok {
		authVersion = min(v[1], 2)
		if authVersion < v[0] {
			authVersion = -1
		}
	}
	if authVersion < 0 {
		return &VersionError{Key: 36, BrokerMax: -1, ClientRange: [2]int16{0, 2}}
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = mech.Name()
	hsResp := hs.ResponseKind().(*kmsg.SASLHandshakeResponse)
	if err := c.roundTrip(nc, hs, hsResp); err != nil {
		return err
	}
	if err := kafkaErr(hsResp.ErrorCode, nil); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.requestTimeout)
	defer cancel()
	sess, msg, err := mech.Authenticate(ctx, c.addr)
	if err != nil {
		return fmt.Errorf("client: SASL %s: %w", mech.Name(), err)
	}
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version = authVersion
		req.SASLAuthBytes = msg
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		if err := c.roundTrip(nc, req, resp); err != nil {
			return err
		}
		if err := kafkaErr(resp.ErrorCode, resp.ErrorMessage); err != nil {
			return err
		}
		done, next, err := sess.Challenge(resp.SASLAuthBytes)
		if err != nil {
			return fmt.Errorf("client: SASL %s: %w", mech.Name(), err)
		}
		if done {
			return nil
		}
		msg = next
	}
}

// roundTrip writes one request and reads its response, before the
// connection's reader starts.
func (c *conn) roundTrip(nc net.Conn, req kmsg.Request, resp kmsg.Response) error {
	if _, err := nc.Write(c.fmt.AppendRequest(nil, req, 0)); err != nil {
		return err
	}
	body, err := readFrame(nc)
	if err != nil {
		return err
	}
	if len(body) < 4 {
		return fmt.Errorf("client: short %T", resp)
	}
	body = body[4:] // correlation id
	if req.IsFlexible() {
		if body, err = skipTags(body); err != nil {
			return err
		}
	}
	resp.SetVersion(req.GetVersion())
	return resp.ReadFrom(body)
}
