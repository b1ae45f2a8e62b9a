package scram

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"

	kscram "github.com/twmb/franz-go/pkg/sasl/scram"
)

// serverFirst parses a server-first message's salt and iteration count.
func serverFirst(t *testing.T, msg []byte) (salt []byte, iterations int) {
	t.Helper()
	for _, attr := range strings.Split(string(msg), ",") {
		k, v, _ := strings.Cut(attr, "=")
		switch k {
		case "s":
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				t.Fatalf("salt %q: %v", v, err)
			}
			salt = b
		case "i":
			iterations, _ = strconv.Atoi(v)
		}
	}
	return salt, iterations
}

// An unknown user is not failed at the client's first message, which
// would tell the client that the user does not exist: the server answers
// with a salt of a real one's size, the same each time for that name, and
// DefaultIterations, and the conversation fails at the proof, as a wrong
// password does.
func TestUnknownUserGetsFakeCredential(t *testing.T) {
	none := func(string) (Credential, bool) { return Credential{}, false }
	for _, m := range []Mechanism{SHA256, SHA512} {
		t.Run(m.String(), func(t *testing.T) {
			first := func(user string) []byte {
				t.Helper()
				resp, done, err := NewServerConversation(m, none).Step([]byte("n,,n=" + user + ",r=abc"))
				if err != nil || done {
					t.Fatalf("first message of unknown user %s: %v, done %v", user, err, done)
				}
				salt, iterations := serverFirst(t, resp)
				if len(salt) != len(NewSalt()) || iterations != DefaultIterations {
					t.Fatalf("unknown user %s: salt of %d bytes, %d iterations", user, len(salt), iterations)
				}
				return salt
			}
			if a, b, c := first("mallory"), first("mallory"), first("trudy"); !bytes.Equal(a, b) || bytes.Equal(a, c) {
				t.Fatalf("fake salts: mallory %x then %x, trudy %x; want the same per name", a, b, c)
			}

			auth := kscram.Auth{User: "mallory", Pass: "guess"}
			mech := auth.AsSha256Mechanism()
			if m == SHA512 {
				mech = auth.AsSha512Mechanism()
			}
			sess, msg, err := mech.Authenticate(context.Background(), "h:1")
			if err != nil {
				t.Fatal(err)
			}
			srv := NewServerConversation(m, none)
			resp, _, err := srv.Step(msg)
			if err != nil {
				t.Fatal(err)
			}
			_, final, err := sess.Challenge(resp)
			if err != nil {
				t.Fatalf("the client refused the fake server-first message: %v", err)
			}
			if _, _, err := srv.Step(final); !errors.Is(err, ErrAuthFailed) {
				t.Fatalf("final message of an unknown user: %v, want ErrAuthFailed", err)
			}
		})
	}
}

// countDerivations makes deriveKey record the iteration count of each
// call for the rest of the test.
func countDerivations(t *testing.T) *[]int {
	var calls []int
	orig := deriveKey
	deriveKey = func(m Mechanism, password string, salt []byte, iterations int) ([]byte, error) {
		calls = append(calls, iterations)
		return orig(m, password, salt, iterations)
	}
	t.Cleanup(func() { deriveKey = orig })
	return &calls
}

// A password proven right costs no derivation the next time, until the
// credential changes; a wrong one costs a derivation every time.
func TestPlainVerifierRemembersProvenPasswords(t *testing.T) {
	c, c2 := mustCredential(t, SHA512, "right"), mustCredential(t, SHA512, "right")
	calls := countDerivations(t)
	v := NewPlainVerifier()
	steps := []struct {
		user, pass string
		cred       Credential
		want       bool
		calls      int // derivations so far
	}{
		{"alice", "right", c, true, 1},
		{"alice", "right", c, true, 1},
		{"alice", "wrong", c, false, 2},
		{"alice", "wrong", c, false, 3},
		{"alice", "right", c, true, 3},
		{"bob", "right", c, true, 4},    // remembered per user
		{"alice", "right", c2, true, 5}, // a new salt: proven again
		{"alice", "right", c, true, 6},
	}
	for i, s := range steps {
		if got := v.Verify(SHA512, s.user, s.cred, true, s.pass); got != s.want || len(*calls) != s.calls {
			t.Fatalf("step %d (%s/%s): %v after %d derivations, want %v after %d", i, s.user, s.pass, got, len(*calls), s.want, s.calls)
		}
	}
	if v.Derivations() != uint64(len(*calls)) {
		t.Fatalf("Derivations() = %d, want %d", v.Derivations(), len(*calls))
	}
}

// An unknown user costs a derivation with DefaultIterations each time, as
// a wrong password of a user created with the default does, and never
// passes.
func TestPlainVerifierUnknownUserCostsADerivation(t *testing.T) {
	calls := countDerivations(t)
	v := NewPlainVerifier()
	for range 2 {
		if v.Verify(SHA512, "nobody", Credential{}, false, "guess") {
			t.Fatal("an unknown user passed")
		}
	}
	if len(*calls) != 2 || (*calls)[0] != DefaultIterations || (*calls)[1] != DefaultIterations {
		t.Fatalf("derivations of an unknown user: %v, want two of %d iterations", *calls, DefaultIterations)
	}
}

func mustCredential(t *testing.T, m Mechanism, pass string) Credential {
	t.Helper()
	c, err := NewCredential(m, pass, MaxIterations)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
