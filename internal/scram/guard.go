package scram

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"sync/atomic"
)

// processKey keys the HMACs behind fake credentials and remembered
// passwords. It is drawn once per process and never leaves it.
var processKey = sync.OnceValue(func() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
})

// keyed is HMAC-SHA256 under processKey of parts, each length-prefixed so
// that no two lists of parts give the same input.
func keyed(parts ...[]byte) []byte {
	h := hmac.New(sha256.New, processKey())
	for _, p := range parts {
		h.Write(binary.AppendUvarint(nil, uint64(len(p))))
		h.Write(p)
	}
	return h.Sum(nil)
}

// fakeCredential is the credential an unknown user is authenticated
// against: derived from the name under processKey, so that it is the same
// each time a name is tried, as a real user's is (a fresh salt each time
// would tell the two apart), and no password matches it but by chance.
// It has a real credential's salt size and DefaultIterations.
func fakeCredential(m Mechanism, user string) Credential {
	tag := []byte{byte(m)}
	stored := keyed([]byte("stored key"), tag, []byte(user))
	server := keyed([]byte("server key"), tag, []byte(user))
	for len(stored) < m.KeyLen() {
		stored = append(stored, keyed(stored)...)
		server = append(server, keyed(server)...)
	}
	return Credential{
		Salt:       keyed([]byte("salt"), tag, []byte(user)),
		Iterations: DefaultIterations,
		StoredKey:  stored[:m.KeyLen()],
		ServerKey:  server[:m.KeyLen()],
	}
}

// maxProven bounds the passwords a PlainVerifier remembers.
const maxProven = 10_000

// PlainVerifier checks SASL PLAIN passwords against SCRAM credentials.
// Checking a password costs a key derivation (PBKDF2, milliseconds of
// CPU), so it remembers, per user and mechanism, an HMAC under processKey
// of the last password it proved right together with the credential it
// matched: that password costs one HMAC next time, until the credential
// changes. Any other password costs a derivation every time, and so does
// any password of an unknown user, against a fake credential with
// DefaultIterations, so that the time of a failure does not tell whether
// the user exists. It is safe for concurrent use.
type PlainVerifier struct {
	mu     sync.Mutex
	proven map[provenKey][]byte // guarded by mu: provenTag of the password proven right; at most maxProven

	derivations atomic.Uint64
}

type provenKey struct {
	user string
	m    Mechanism
}

// NewPlainVerifier returns a verifier that remembers nothing yet.
func NewPlainVerifier() *PlainVerifier {
	return &PlainVerifier{proven: make(map[provenKey][]byte)}
}

// Verify reports whether password is user's, whose credential for m is c
// when known (the store has one), else none: then it does the same work
// against a fake credential and reports false.
func (v *PlainVerifier) Verify(m Mechanism, user string, c Credential, known bool, password string) bool {
	if !known {
		c = fakeCredential(m, user)
	}
	k := provenKey{user: user, m: m}
	tag := provenTag(k, c, password)
	if known {
		v.mu.Lock()
		t, ok := v.proven[k]
		v.mu.Unlock()
		if ok && hmac.Equal(t, tag) {
			return true
		}
	}
	v.derivations.Add(1)
	if !Verify(m, c, password) || !known {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.proven[k]; !ok && len(v.proven) >= maxProven {
		for old := range v.proven { // any one: the map's order is random
			delete(v.proven, old)
			break
		}
	}
	v.proven[k] = tag
	return true
}

// Derivations counts the key derivations Verify did.
func (v *PlainVerifier) Derivations() uint64 { return v.derivations.Load() }

// provenTag binds a password to the user, mechanism and credential
// version (salt, iterations, StoredKey) it was checked against.
func provenTag(k provenKey, c Credential, password string) []byte {
	return keyed([]byte{byte(k.m)}, []byte(k.user), c.Salt, binary.AppendUvarint(nil, uint64(c.Iterations)),
		c.StoredKey, []byte(password))
}
