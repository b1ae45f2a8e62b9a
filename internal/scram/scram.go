// Package scram is the server side of SCRAM-SHA-256 and SCRAM-SHA-512
// (RFC 5802, RFC 7677) as Kafka uses them, and the derivation of the
// stored credential from a password.
//
// A server's duties, in order: keep a Credential per user and mechanism
// (never the password: NewCredential or Keys derive it); for each client
// start a ServerConversation and feed it the client's messages with Step
// until it reports done or an error; an error means the client failed to
// authenticate (ErrAuthFailed) or broke the protocol (ErrProtocol). For
// SASL PLAIN against the same credentials, share one PlainVerifier.
//
// Neither tells a client whether a user exists: an unknown user's
// conversation goes on with a fake credential and fails at the proof, and
// PlainVerifier does the same work for an unknown user as for a wrong
// password.
package scram

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
)

// Mechanism is a SCRAM hash, numbered as Kafka numbers them in
// DescribeUserScramCredentials (0 is UNKNOWN).
type Mechanism int8

// Mechanisms.
const (
	SHA256 Mechanism = 1
	SHA512 Mechanism = 2
)

// Kafka's iteration bounds for a stored credential.
const (
	MinIterations     = 4096
	MaxIterations     = 16384
	DefaultIterations = 4096
)

// String is the SASL mechanism name.
func (m Mechanism) String() string {
	switch m {
	case SHA256:
		return "SCRAM-SHA-256"
	case SHA512:
		return "SCRAM-SHA-512"
	}
	return fmt.Sprintf("SCRAM-UNKNOWN(%d)", int8(m))
}

// ParseMechanism reads a SASL mechanism name.
func ParseMechanism(name string) (Mechanism, bool) {
	switch name {
	case "SCRAM-SHA-256":
		return SHA256, true
	case "SCRAM-SHA-512":
		return SHA512, true
	}
	return 0, false
}

// Valid reports whether m is SHA256 or SHA512.
func (m Mechanism) Valid() bool { return m == SHA256 || m == SHA512 }

func (m Mechanism) newHash() func() hash.Hash {
	if m == SHA512 {
		return sha512.New
	}
	return sha256.New
}

// KeyLen is the size of the mechanism's keys.
func (m Mechanism) KeyLen() int { return m.newHash()().Size() }

// Credential is what a server stores for one user and mechanism.
type Credential struct {
	Salt       []byte
	Iterations int
	StoredKey  []byte
	ServerKey  []byte
}

// SaltedPassword is Hi(password, salt, iterations): what Kafka's
// AlterUserScramCredentials carries.
func SaltedPassword(m Mechanism, password string, salt []byte, iterations int) ([]byte, error) {
	return deriveKey(m, password, salt, iterations)
}

// deriveKey is PBKDF2 with the mechanism's hash; tests count its calls.
var deriveKey = func(m Mechanism, password string, salt []byte, iterations int) ([]byte, error) {
	return pbkdf2.Key(m.newHash(), password, salt, iterations, m.KeyLen())
}

// Keys derives StoredKey and ServerKey from a salted password.
func Keys(m Mechanism, salted []byte) (storedKey, serverKey []byte) {
	clientKey := mac(m, salted, []byte("Client Key"))
	h := m.newHash()()
	h.Write(clientKey)
	return h.Sum(nil), mac(m, salted, []byte("Server Key"))
}

// NewSalt returns 32 random bytes.
func NewSalt() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}

// NewCredential salts and derives a password's credential.
func NewCredential(m Mechanism, password string, iterations int) (Credential, error) {
	salt := NewSalt()
	salted, err := SaltedPassword(m, password, salt, iterations)
	if err != nil {
		return Credential{}, err
	}
	stored, server := Keys(m, salted)
	return Credential{Salt: salt, Iterations: iterations, StoredKey: stored, ServerKey: server}, nil
}

// Verify reports whether password matches c (for SASL PLAIN against SCRAM
// credentials). It costs one key derivation.
func Verify(m Mechanism, c Credential, password string) bool {
	salted, err := SaltedPassword(m, password, c.Salt, c.Iterations)
	if err != nil {
		return false
	}
	stored, _ := Keys(m, salted)
	return hmac.Equal(stored, c.StoredKey)
}

func mac(m Mechanism, key, msg []byte) []byte {
	h := hmac.New(m.newHash(), key)
	h.Write(msg)
	return h.Sum(nil)
}

// Errors of a conversation.
var (
	// ErrAuthFailed: unknown user or wrong proof (SASL_AUTHENTICATION_FAILED).
	ErrAuthFailed = errors.New("scram: authentication failed")
	// ErrProtocol: a message that is not what SCRAM expects here.
	ErrProtocol = errors.New("scram: protocol error")
)

// ProtocolError details ErrProtocol.
type ProtocolError struct{ Reason string }

func (e *ProtocolError) Error() string { return "scram: protocol error: " + e.Reason }
func (e *ProtocolError) Unwrap() error { return ErrProtocol }
