package kafkaapi

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/scram"
)

// maxSASLFrame bounds a request frame before authentication (Kafka's
// sasl.server.max.receive.size), so that an unauthenticated client cannot
// make the server allocate Config.MaxRequestBytes.
const maxSASLFrame = 512 << 10

// ErrAuthentication is wrapped by the errors that close a SASL connection
// before it authenticated.
var ErrAuthentication = errors.New("kafkaapi: SASL authentication")

// AuthError ends a connection on a SASL listener: a failed authentication,
// or a request that is not allowed before it. It wraps ErrAuthentication
// and ErrProtocol.
type AuthError struct {
	Reason string
}

func (e *AuthError) Error() string { return "kafkaapi: SASL authentication: " + e.Reason }
func (e *AuthError) Unwrap() []error {
	return []error{ErrAuthentication, ErrProtocol}
}

// connAuth is one connection's SASL state. Only the connection's reader
// goroutine changes it; done is also read by the authentication timer.
type connAuth struct {
	mechanisms []string
	store      Security
	guard      *authGuard
	host       string // the client's IP
	mechanism  string // chosen by SaslHandshake; "" before
	conv       *scram.ServerConversation
	attempt    *ticket         // the limiter's token this attempt took; nil before it or without a limit
	hold       time.Duration   // how long a refusal's answer waits: until the address has a token again
	user       string          // once authenticated
	token      TokenCredential // the delegation token a tokenauth=true login looked up
	tokenAuth  bool            // authenticated by a delegation token: user is its owner
	done       atomic.Bool     // authenticated
}

func newConnAuth(mechanisms []string, store Security, guard *authGuard, host string) *connAuth {
	return &connAuth{mechanisms: mechanisms, store: store, guard: guard, host: host}
}

func (a *connAuth) authenticated() bool { return a.done.Load() }

// startSASL starts a request that arrived before authentication: only
// ApiVersions, SaslHandshake and SaslAuthenticate are allowed, as in
// Kafka; anything else closes the connection. SASL requests are answered
// here, on the reader, so that the next request is read in the state they
// leave.
func (s *Server) startSASL(frame []byte, rc requestInfo, a *connAuth) (started, error) {
	h, err := peekHeader(frame)
	if err != nil {
		return started{}, err
	}
	switch kmsg.Key(h.Key) {
	case kmsg.ApiVersions:
		return s.startRequest(frame, rc)
	case kmsg.SASLHandshake, kmsg.SASLAuthenticate:
	default:
		return started{}, &AuthError{Reason: fmt.Sprintf("request key %d before authentication", h.Key)}
	}
	req, _, err := decodeRequest(frame, h)
	if err != nil {
		return started{}, err
	}
	st := started{correlationID: h.CorrelationID, headerV1: req.IsFlexible()}
	var resp kmsg.Response
	switch req := req.(type) {
	case *kmsg.SASLHandshakeRequest:
		resp, st.closeAfter = a.handshake(req)
	case *kmsg.SASLAuthenticateRequest:
		resp, st.closeAfter = a.authenticate(req)
		if st.closeAfter == nil && a.authenticated() {
			s.log.Debug("kafkaapi: authenticated", "user", a.user, "mechanism", a.mechanism, "remote", rc.host)
		}
	}
	st.reply = answered(resp)
	if st.closeAfter != nil {
		// Kafka's connection.failed.authentication.delay.ms: a client
		// that fails waits before it learns so and may try again; one
		// refused for too many failures waits until it may.
		st.reply = a.guard.delayed(resp, a.hold)
	}
	return st, nil
}

// handshake picks the mechanism. An unknown one is answered
// UNSUPPORTED_SASL_MECHANISM with the enabled ones, then the connection
// closes, as Kafka does.
func (a *connAuth) handshake(req *kmsg.SASLHandshakeRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = slices.Clone(a.mechanisms)
	if a.mechanism != "" {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, &AuthError{Reason: "second SaslHandshake"}
	}
	if req.Version == 0 {
		// v0 would send the tokens unframed, which the server does not
		// read; modern clients use v1 and SaslAuthenticate.
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, &AuthError{Reason: "SaslHandshake v0 (unframed tokens) is not supported"}
	}
	if !slices.Contains(a.mechanisms, req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return resp, &AuthError{Reason: fmt.Sprintf("unsupported mechanism %q", req.Mechanism)}
	}
	a.mechanism = req.Mechanism
	if m, ok := scram.ParseMechanism(req.Mechanism); ok {
		a.conv = scram.NewServerConversation(m, func(user string) (scram.Credential, bool) {
			return a.store.ScramCredential(user, m)
		}).WithTokens(func(id string) (scram.Credential, bool) {
			tc, ok := a.store.DelegationTokenCredential(id, m)
			a.token = tc
			return tc.Credential, ok
		})
	}
	return resp, nil
}

// authenticate runs one step of the chosen mechanism. A failure is answered
// SASL_AUTHENTICATION_FAILED, then the connection closes. The first step
// of an attempt takes a token from the client address's allowance of
// failures, given back on success; without one the attempt is refused
// before any work.
func (a *connAuth) authenticate(req *kmsg.SASLAuthenticateRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	fail := func(msg, reason string) (kmsg.Response, error) {
		a.guard.failed.Add(1)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &msg
		return resp, &AuthError{Reason: reason}
	}
	invalid := fmt.Sprintf("Authentication failed during authentication due to invalid credentials with SASL mechanism %s", a.mechanism)
	if a.mechanism == "" {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate before SaslHandshake"
		resp.ErrorMessage = &msg
		return resp, &AuthError{Reason: msg}
	}
	if !a.begin() {
		a.guard.refused.Add(1)
		return fail("Authentication failed: too many failed authentications from this address, try again later",
			"too many failed authentications from "+a.host)
	}
	var out []byte
	done := true
	if a.mechanism == MechanismPlain {
		user, ok := a.plain(req.SASLAuthBytes)
		if !ok {
			return fail(invalid, "PLAIN: bad user or password")
		}
		a.user = user
	} else {
		var err error
		if out, done, err = a.conv.Step(req.SASLAuthBytes); err != nil {
			return fail(invalid, err.Error())
		}
	}
	if done && a.conv != nil && a.conv.TokenAuth() {
		// Kafka's ScramSaslServer: the token's owner is the principal,
		// and a token past its expiry (by this node's clock) fails.
		if a.token.ExpiryMs < time.Now().UnixMilli() {
			return fail("Authentication failed: Delegation Token expired", "delegation token "+a.conv.User()+" expired")
		}
		_, a.user = splitPrincipal(a.token.Owner)
		a.tokenAuth = true
	} else if done && a.conv != nil {
		a.user = a.conv.User()
	}
	resp.SASLAuthBytes = out
	if done {
		a.succeed()
	}
	return resp, nil
}

// begin takes the attempt's token from the limiter at its first step;
// false: the address has none left.
func (a *connAuth) begin() bool {
	if a.attempt != nil || a.guard.limiter == nil {
		return true
	}
	tk, ok, wait := a.guard.limiter.take(a.host)
	if ok {
		a.attempt = &tk
	}
	a.hold = wait
	return ok
}

// succeed marks the connection authenticated as a.user and gives the
// attempt's token back.
func (a *connAuth) succeed() {
	a.done.Store(true)
	a.guard.succeeded.Add(1)
	if a.attempt != nil {
		a.guard.limiter.giveBack(*a.attempt)
	}
}

// plain checks a PLAIN message, authzid NUL user NUL password (RFC 4616),
// against the user's SCRAM credentials (through the shared PlainVerifier,
// which remembers passwords it proved right). The authzid must be empty or
// the user, as in Kafka.
func (a *connAuth) plain(msg []byte) (string, bool) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 || len(parts[1]) == 0 {
		return "", false
	}
	authz, user, pass := string(parts[0]), string(parts[1]), string(parts[2])
	if authz != "" && authz != user {
		return "", false
	}
	for _, m := range []scram.Mechanism{scram.SHA512, scram.SHA256} {
		if c, ok := a.store.ScramCredential(user, m); ok {
			return user, a.guard.plain.Verify(m, user, c, true, pass)
		}
	}
	// The same work as a wrong password, so that the time of the answer
	// does not tell whether the user exists.
	return "", a.guard.plain.Verify(scram.SHA512, user, scram.Credential{}, false, pass)
}

// illegalSASLState answers SaslHandshake and SaslAuthenticate on a
// connection that is not authenticating (a listener without SASL, or after
// authentication; re-authentication is not supported), as Kafka does.
func illegalSASLState(req kmsg.Request) kmsg.Response {
	msg := "SASL is not expected on this connection now"
	switch req := req.(type) {
	case *kmsg.SASLHandshakeRequest:
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp
	case *kmsg.SASLAuthenticateRequest:
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = &msg
		return resp
	}
	return nil
}
