package kafkaapi

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

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
	store      CredentialStore
	mechanism  string // chosen by SaslHandshake; "" before
	conv       *scram.ServerConversation
	user       string      // once authenticated
	done       atomic.Bool // authenticated
}

func newConnAuth(mechanisms []string, store CredentialStore) *connAuth {
	return &connAuth{mechanisms: mechanisms, store: store}
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
		})
	}
	return resp, nil
}

// authenticate runs one step of the chosen mechanism. A failure is answered
// SASL_AUTHENTICATION_FAILED, then the connection closes.
func (a *connAuth) authenticate(req *kmsg.SASLAuthenticateRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	fail := func(reason string) (kmsg.Response, error) {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := fmt.Sprintf("Authentication failed during authentication due to invalid credentials with SASL mechanism %s", a.mechanism)
		resp.ErrorMessage = &msg
		return resp, &AuthError{Reason: reason}
	}
	switch {
	case a.mechanism == "":
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate before SaslHandshake"
		resp.ErrorMessage = &msg
		return resp, &AuthError{Reason: msg}
	case a.mechanism == MechanismPlain:
		user, ok := a.plain(req.SASLAuthBytes)
		if !ok {
			return fail("PLAIN: bad user or password")
		}
		a.user = user
		a.done.Store(true)
		return resp, nil
	}
	out, done, err := a.conv.Step(req.SASLAuthBytes)
	if err != nil {
		return fail(err.Error())
	}
	resp.SASLAuthBytes = out
	if done {
		a.user = a.conv.User()
		a.done.Store(true)
	}
	return resp, nil
}

// plain checks a PLAIN message, authzid NUL user NUL password (RFC 4616),
// against the user's SCRAM credentials. The authzid must be empty or the
// user, as in Kafka.
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
			return user, scram.Verify(m, c, pass)
		}
	}
	return "", false
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
