package metadata

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// ScramMechanism is a SCRAM hash, numbered as Kafka's
// DescribeUserScramCredentials and AlterUserScramCredentials number them.
type ScramMechanism uint8

// SCRAM mechanisms. Zero is Kafka's UNKNOWN.
const (
	ScramSHA256 ScramMechanism = 1
	ScramSHA512 ScramMechanism = 2
)

func (m ScramMechanism) String() string {
	switch m {
	case ScramSHA256:
		return "SCRAM-SHA-256"
	case ScramSHA512:
		return "SCRAM-SHA-512"
	}
	return fmt.Sprintf("SCRAM-UNKNOWN(%d)", uint8(m))
}

// Valid reports whether m is a known mechanism.
func (m ScramMechanism) Valid() bool { return m == ScramSHA256 || m == ScramSHA512 }

// KeyLen is the length of the mechanism's keys: its hash's output size.
func (m ScramMechanism) KeyLen() int {
	if m == ScramSHA512 {
		return 64
	}
	return 32
}

// Iteration bounds of a SCRAM credential: Kafka's (RFC 7677 asks for at
// least 4096).
const (
	MinScramIterations = 4096
	MaxScramIterations = 16384
	// MaxScramSaltLen bounds a stored salt.
	MaxScramSaltLen = 1024
	// MaxScramUserLen bounds a user name.
	MaxScramUserLen = 1024
)

// ScramCredential is what the cluster stores of one user's password for one
// mechanism (RFC 5802): never the password nor the salted password, only
// what a server needs to verify a client and prove itself.
type ScramCredential struct {
	User       string
	Mechanism  ScramMechanism
	Iterations int32
	Salt       []byte
	StoredKey  []byte // H(HMAC(SaltedPassword, "Client Key"))
	ServerKey  []byte // HMAC(SaltedPassword, "Server Key")
}

func (c ScramCredential) clone() ScramCredential {
	c.Salt, c.StoredKey, c.ServerKey = bytes.Clone(c.Salt), bytes.Clone(c.StoredKey), bytes.Clone(c.ServerKey)
	return c
}

func (c ScramCredential) equal(o ScramCredential) bool {
	return c.User == o.User && c.Mechanism == o.Mechanism && c.Iterations == o.Iterations &&
		bytes.Equal(c.Salt, o.Salt) && bytes.Equal(c.StoredKey, o.StoredKey) && bytes.Equal(c.ServerKey, o.ServerKey)
}

// check validates a credential's fields.
func (c ScramCredential) check() error {
	switch {
	case c.User == "" || len(c.User) > MaxScramUserLen:
		return &ScramError{User: c.User, Mechanism: c.Mechanism, Err: ErrInvalidScramUser}
	case !c.Mechanism.Valid():
		return &ScramError{User: c.User, Mechanism: c.Mechanism, Err: ErrUnsupportedScramMechanism}
	case c.Iterations < MinScramIterations || c.Iterations > MaxScramIterations:
		return &ScramError{User: c.User, Mechanism: c.Mechanism, Err: ErrUnacceptableCredential,
			Reason: fmt.Sprintf("%d iterations, want %d to %d", c.Iterations, MinScramIterations, MaxScramIterations)}
	case len(c.Salt) == 0 || len(c.Salt) > MaxScramSaltLen:
		return &ScramError{User: c.User, Mechanism: c.Mechanism, Err: ErrUnacceptableCredential, Reason: "salt length"}
	case len(c.StoredKey) != c.Mechanism.KeyLen() || len(c.ServerKey) != c.Mechanism.KeyLen():
		return &ScramError{User: c.User, Mechanism: c.Mechanism, Err: ErrUnacceptableCredential, Reason: "key length"}
	}
	return nil
}

// scramKey indexes stored credentials.
type scramKey struct {
	User      string
	Mechanism ScramMechanism
}

func compareScramKeys(a, b scramKey) int {
	return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.Mechanism, b.Mechanism))
}

// ScramDeletion removes one user's credential for one mechanism.
type ScramDeletion struct {
	User      string
	Mechanism ScramMechanism
}

// AlterScramCredentials deletes and upserts SCRAM credentials (Kafka's
// AlterUserScramCredentials). As in Kafka, each user's changes are
// all-or-nothing and users are independent: a user whose changes include
// an invalid credential (ErrUnsupportedScramMechanism,
// ErrUnacceptableCredential, ErrInvalidScramUser), the same mechanism twice
// (ErrDuplicateScramResource) or the deletion of a credential that does not
// exist (ErrScramNotFound) gets that error and nothing of it is changed.
// With IfAbsent, an upsertion for a user and mechanism that already has a
// credential is skipped (no error): a node seeds its configured users that
// way without overwriting passwords changed since.
//
// Result: AlterScramCredentialsResult.
type AlterScramCredentials struct {
	Deletions  []ScramDeletion
	Upsertions []ScramCredential
	IfAbsent   bool
}

// AlterScramCredentialsResult has one entry per user named in the command,
// sorted by user; Err is nil for a user whose changes were applied.
type AlterScramCredentialsResult struct {
	Users []ScramUserResult
}

// ScramUserResult is one user's outcome.
type ScramUserResult struct {
	User string
	Err  error
}

// Type implements Command.
func (AlterScramCredentials) Type() CommandType { return TypeAlterScramCredentials }

func (c AlterScramCredentials) appendBody(b []byte) []byte {
	b = appendLen(b, len(c.Deletions))
	for _, d := range c.Deletions {
		b = appendString(b, d.User)
		b = appendU8(b, uint8(d.Mechanism))
	}
	b = appendLen(b, len(c.Upsertions))
	for _, u := range c.Upsertions {
		b = appendCredential(b, u)
	}
	return appendBool(b, c.IfAbsent)
}

func appendCredential(b []byte, c ScramCredential) []byte {
	b = appendString(b, c.User)
	b = appendU8(b, uint8(c.Mechanism))
	b = appendI32(b, c.Iterations)
	b = appendString(b, string(c.Salt))
	b = appendString(b, string(c.StoredKey))
	return appendString(b, string(c.ServerKey))
}

func readCredential(r *reader) ScramCredential {
	return ScramCredential{
		User:       r.str("scram user"),
		Mechanism:  ScramMechanism(r.u8("scram mechanism")),
		Iterations: r.i32("scram iterations"),
		Salt:       []byte(r.str("scram salt")),
		StoredKey:  []byte(r.str("scram stored key")),
		ServerKey:  []byte(r.str("scram server key")),
	}
}

func decodeAlterScram(r *reader) AlterScramCredentials {
	var c AlterScramCredentials
	if n := r.length("scram deletions", 5); n > 0 {
		c.Deletions = make([]ScramDeletion, n)
		for i := range c.Deletions {
			c.Deletions[i] = ScramDeletion{User: r.str("scram user"), Mechanism: ScramMechanism(r.u8("scram mechanism"))}
		}
	}
	if n := r.length("scram upsertions", 21); n > 0 {
		c.Upsertions = make([]ScramCredential, n)
		for i := range c.Upsertions {
			c.Upsertions[i] = readCredential(r)
		}
	}
	c.IfAbsent = r.boolean("if absent")
	return c
}

// alterScram applies AlterScramCredentials user by user, in user order.
func (s *Snapshot) alterScram(c AlterScramCredentials) (AlterScramCredentialsResult, error) {
	type change struct {
		dels []ScramDeletion
		ups  []ScramCredential
	}
	byUser := map[string]*change{}
	get := func(u string) *change {
		ch := byUser[u]
		if ch == nil {
			ch = &change{}
			byUser[u] = ch
		}
		return ch
	}
	for _, d := range c.Deletions {
		ch := get(d.User)
		ch.dels = append(ch.dels, d)
	}
	for _, u := range c.Upsertions {
		ch := get(u.User)
		ch.ups = append(ch.ups, u)
	}
	var res AlterScramCredentialsResult
	cloned := false
	for _, user := range sortedKeys(byUser) {
		ch := byUser[user]
		err := s.checkScramChange(user, ch.dels, ch.ups)
		res.Users = append(res.Users, ScramUserResult{User: user, Err: err})
		if err != nil {
			continue
		}
		if !cloned {
			s.scram = cloneMap(s.scram)
			cloned = true
		}
		for _, d := range ch.dels {
			delete(s.scram, scramKey(d))
		}
		for _, u := range ch.ups {
			k := scramKey{u.User, u.Mechanism}
			if _, ok := s.scram[k]; ok && c.IfAbsent {
				continue
			}
			s.scram[k] = u.clone()
		}
	}
	if cloned && len(s.scram) == 0 {
		s.scram = nil
	}
	return res, nil
}

// checkScramChange validates one user's part of AlterScramCredentials
// against the state, in a fixed order so that every replica reports the
// same error.
func (s *Snapshot) checkScramChange(user string, dels []ScramDeletion, ups []ScramCredential) error {
	seen := map[ScramMechanism]bool{}
	for _, d := range dels {
		if seen[d.Mechanism] {
			return &ScramError{User: user, Mechanism: d.Mechanism, Err: ErrDuplicateScramResource}
		}
		seen[d.Mechanism] = true
	}
	for _, u := range ups {
		if seen[u.Mechanism] {
			return &ScramError{User: user, Mechanism: u.Mechanism, Err: ErrDuplicateScramResource}
		}
		seen[u.Mechanism] = true
	}
	for _, d := range dels {
		if user == "" {
			return &ScramError{User: user, Mechanism: d.Mechanism, Err: ErrInvalidScramUser}
		}
		if !d.Mechanism.Valid() {
			return &ScramError{User: user, Mechanism: d.Mechanism, Err: ErrUnsupportedScramMechanism}
		}
	}
	for _, u := range ups {
		if err := u.check(); err != nil {
			return err
		}
	}
	for _, d := range dels {
		if _, ok := s.scram[scramKey(d)]; !ok {
			return &ScramError{User: user, Mechanism: d.Mechanism, Err: ErrScramNotFound}
		}
	}
	return nil
}

// ScramCredential returns a copy of a user's credential for a mechanism.
func (s *Snapshot) ScramCredential(user string, m ScramMechanism) (ScramCredential, bool) {
	c, ok := s.scram[scramKey{user, m}]
	if !ok {
		return ScramCredential{}, false
	}
	return c.clone(), true
}

// ScramCredentials returns copies of every stored credential, sorted by user
// then mechanism.
func (s *Snapshot) ScramCredentials() []ScramCredential {
	keys := make([]scramKey, 0, len(s.scram))
	for k := range s.scram {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareScramKeys)
	out := make([]ScramCredential, len(keys))
	for i, k := range keys {
		out[i] = s.scram[k].clone()
	}
	return out
}

// SCRAM errors, with the Kafka code each maps to in brackets.
var (
	// ErrScramNotFound: deleting a credential that does not exist.
	// [RESOURCE_NOT_FOUND]
	ErrScramNotFound = errors.New("metadata: scram credential not found")
	// ErrUnsupportedScramMechanism: a mechanism other than SCRAM-SHA-256 or
	// SCRAM-SHA-512. [UNSUPPORTED_SASL_MECHANISM]
	ErrUnsupportedScramMechanism = errors.New("metadata: unsupported scram mechanism")
	// ErrUnacceptableCredential: iterations out of range, or a bad salt or
	// key. [UNACCEPTABLE_CREDENTIAL]
	ErrUnacceptableCredential = errors.New("metadata: unacceptable scram credential")
	// ErrDuplicateScramResource: one user and mechanism changed twice in
	// one command. [DUPLICATE_RESOURCE]
	ErrDuplicateScramResource = errors.New("metadata: scram credential changed twice")
	// ErrInvalidScramUser: an empty or too long user name.
	// [UNACCEPTABLE_CREDENTIAL]
	ErrInvalidScramUser = errors.New("metadata: invalid scram user name")
)

// ScramError is a rejected change of one user's credentials; it wraps one
// of the SCRAM sentinels.
type ScramError struct {
	User      string
	Mechanism ScramMechanism
	Reason    string // for people; may be empty
	Err       error
}

func (e *ScramError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("%v: user %q %v: %s", e.Err, e.User, e.Mechanism, e.Reason)
	}
	return fmt.Sprintf("%v: user %q %v", e.Err, e.User, e.Mechanism)
}
func (e *ScramError) Unwrap() error { return e.Err }
