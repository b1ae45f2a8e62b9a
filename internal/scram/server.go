package scram

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"strconv"
	"strings"
)

// Lookup finds a user's credential for the conversation's mechanism.
type Lookup func(user string) (Credential, bool)

// ServerConversation is one client's authentication: two client messages
// in, two server messages out. It is not safe for concurrent use.
type ServerConversation struct {
	mech   Mechanism
	lookup Lookup
	// tokens looks up delegation tokens, for a client-first message with
	// the extension tokenauth=true (KIP-48); nil: such a login fails.
	tokens Lookup
	token  bool // the client asked for token authentication
	step   int

	user        string
	cred        Credential
	unknown     bool // cred is fakeCredential: the lookup found no user
	gs2Header   string
	clientBare  string
	serverFirst string
	nonce       string
}

// NewServerConversation starts a conversation for mechanism m.
func NewServerConversation(m Mechanism, lookup Lookup) *ServerConversation {
	return &ServerConversation{mech: m, lookup: lookup}
}

// WithTokens sets how a login with the SCRAM extension tokenauth=true
// looks its user name up: as a delegation token id. It returns s.
func (s *ServerConversation) WithTokens(lookup Lookup) *ServerConversation {
	s.tokens = lookup
	return s
}

// TokenAuth reports whether the client asked to log in with a delegation
// token (tokenauth=true), once Step has read its first message.
func (s *ServerConversation) TokenAuth() bool { return s.token }

// User is the authenticated user once Step reported done.
func (s *ServerConversation) User() string { return s.user }

// Step takes the client's next message and returns the server's answer;
// done is true with the server-final message. Any error ends the
// conversation.
func (s *ServerConversation) Step(msg []byte) (resp []byte, done bool, err error) {
	defer func() {
		if err != nil {
			s.step = 3
		}
	}()
	switch s.step {
	case 0:
		s.step = 1
		return s.first(string(msg))
	case 1:
		s.step = 2
		return s.final(string(msg))
	}
	return nil, false, &ProtocolError{Reason: "conversation already ended"}
}

// first handles client-first-message = gs2-header client-first-message-bare.
func (s *ServerConversation) first(msg string) ([]byte, bool, error) {
	// gs2-header: cbind-flag "," [authzid] ","
	cb, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return nil, false, &ProtocolError{Reason: "no gs2 header"}
	}
	switch {
	case cb == "n" || cb == "y":
	case strings.HasPrefix(cb, "p="):
		return nil, false, &ProtocolError{Reason: "channel binding is not supported"}
	default:
		return nil, false, &ProtocolError{Reason: "bad channel binding flag"}
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, false, &ProtocolError{Reason: "no gs2 header"}
	}
	s.gs2Header = msg[:len(msg)-len(bare)]
	s.clientBare = bare
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, false, &ProtocolError{Reason: "client-first-message-bare is not n=...,r=..."}
	}
	user, err := decodeName(attrs[0][2:])
	if err != nil {
		return nil, false, err
	}
	if authz != "" {
		if !strings.HasPrefix(authz, "a=") {
			return nil, false, &ProtocolError{Reason: "bad authzid"}
		}
		if az, err := decodeName(authz[2:]); err != nil || az != user {
			return nil, false, ErrAuthFailed // Kafka: authzid must be the user
		}
	}
	cnonce := attrs[1][2:]
	if cnonce == "" || strings.ContainsAny(cnonce, ",") {
		return nil, false, &ProtocolError{Reason: "bad nonce"}
	}
	// Kafka fails an unknown user here, which tells a client whether the
	// user exists; a fake credential instead makes the conversation fail
	// at the proof, as a wrong password does.
	for _, ext := range attrs[2:] {
		if k, v, _ := strings.Cut(ext, "="); k == "tokenauth" {
			s.token = strings.EqualFold(v, "true") // Kafka's Boolean.parseBoolean
		}
	}
	lookup := s.lookup
	if s.token {
		lookup = s.tokens
	}
	var cred Credential
	ok = false
	if lookup != nil {
		cred, ok = lookup(user)
	}
	if !ok {
		cred = fakeCredential(s.mech, user)
	}
	s.user, s.cred, s.unknown = user, cred, !ok
	var rnd [24]byte
	rand.Read(rnd[:])
	s.nonce = cnonce + base64.RawURLEncoding.EncodeToString(rnd[:])
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(cred.Iterations)
	return []byte(s.serverFirst), false, nil
}

// final handles client-final-message = c=...,r=...[,ext],p=proof.
func (s *ServerConversation) final(msg string) ([]byte, bool, error) {
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return nil, false, &ProtocolError{Reason: "no proof"}
	}
	withoutProof, proofB64 := msg[:i], msg[i+3:]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, false, &ProtocolError{Reason: "client-final-message is not c=...,r=...,p=..."}
	}
	if cb, err := base64.StdEncoding.DecodeString(attrs[0][2:]); err != nil || string(cb) != s.gs2Header {
		return nil, false, &ProtocolError{Reason: "channel binding does not match the gs2 header"}
	}
	// Kafka accepts a nonce that ends with the server's, because
	// librdkafka sends its client nonce once more in front of it; so do
	// we. The proof covers the message as sent.
	if !strings.HasSuffix(attrs[1][2:], s.nonce) {
		return nil, false, &ProtocolError{Reason: "nonce mismatch"}
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil || len(proof) != s.mech.KeyLen() {
		return nil, false, &ProtocolError{Reason: "bad proof encoding"}
	}
	authMsg := []byte(s.clientBare + "," + s.serverFirst + "," + withoutProof)
	sig := mac(s.mech, s.cred.StoredKey, authMsg)
	clientKey := make([]byte, len(proof))
	subtle.XORBytes(clientKey, proof, sig)
	h := s.mech.newHash()()
	h.Write(clientKey)
	if !hmac.Equal(h.Sum(nil), s.cred.StoredKey) || s.unknown {
		return nil, false, ErrAuthFailed
	}
	serverSig := mac(s.mech, s.cred.ServerKey, authMsg)
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSig)), true, nil
}

// decodeName undoes saslname escaping: =2C is ",", =3D is "=".
func decodeName(s string) (string, error) {
	if !strings.Contains(s, "=") {
		if s == "" {
			return "", &ProtocolError{Reason: "empty user name"}
		}
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", &ProtocolError{Reason: "bad escape in user name"}
		}
		i += 2
	}
	return b.String(), nil
}
