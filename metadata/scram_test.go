package metadata

import (
	"bytes"
	"errors"
	"testing"
)

// cred is a well-formed credential whose bytes are derived from its user.
func cred(user string, m ScramMechanism) ScramCredential {
	n := m.KeyLen()
	return ScramCredential{User: user, Mechanism: m, Iterations: 4096, Salt: []byte("salt-" + user),
		StoredKey: bytes.Repeat([]byte{1}, n), ServerKey: bytes.Repeat([]byte{2}, n)}
}

func TestAlterScramCredentials(t *testing.T) {
	s := must(t, cluster3(t), AlterScramCredentials{Upsertions: []ScramCredential{cred("alice", ScramSHA256)}})
	if c, ok := s.ScramCredential("alice", ScramSHA256); !ok || !c.equal(cred("alice", ScramSHA256)) {
		t.Fatalf("alice = %+v, %v", c, ok)
	}

	low := cred("carol", ScramSHA256)
	low.Iterations = 4095
	high := cred("dave", ScramSHA512)
	high.Iterations = 16385
	bad := cred("erin", ScramMechanism(3))
	next, res, err := s.Apply(s.AppliedIndex()+1, AlterScramCredentials{
		Deletions: []ScramDeletion{{"alice", ScramSHA512}, {"bob", ScramSHA256}, {"frank", ScramSHA256}},
		Upsertions: []ScramCredential{low, high, bad, cred("bob", ScramSHA256), cred("gina", ScramSHA256),
			cred("frank", ScramSHA512)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]error{
		"alice": ErrScramNotFound,          // no SHA-512 credential to delete
		"bob":   ErrDuplicateScramResource, // deleted and upserted at once
		"carol": ErrUnacceptableCredential, // too few iterations
		"dave":  ErrUnacceptableCredential, // too many
		"erin":  ErrUnsupportedScramMechanism,
		"frank": ErrScramNotFound,
		"gina":  nil,
	}
	users := res.(AlterScramCredentialsResult).Users
	if len(users) != len(want) {
		t.Fatalf("results %+v", users)
	}
	for _, u := range users {
		if w := want[u.User]; !errors.Is(u.Err, w) || (w == nil) != (u.Err == nil) {
			t.Errorf("%s: %v, want %v", u.User, u.Err, w)
		}
	}
	// Only gina's change was applied; frank's valid upsertion was not,
	// because his deletion failed.
	if got := len(next.ScramCredentials()); got != 2 {
		t.Fatalf("%d credentials, want alice and gina", got)
	}
	if _, ok := next.ScramCredential("frank", ScramSHA512); ok {
		t.Fatal("frank's upsertion applied despite his failed deletion")
	}

	// IfAbsent keeps a stored credential; deletion removes it.
	changed := cred("alice", ScramSHA256)
	changed.Iterations = 8192
	next = must(t, next, AlterScramCredentials{Upsertions: []ScramCredential{changed}, IfAbsent: true})
	if c, _ := next.ScramCredential("alice", ScramSHA256); c.Iterations != 4096 {
		t.Fatal("IfAbsent overwrote a credential")
	}
	next = must(t, next, AlterScramCredentials{Deletions: []ScramDeletion{{"alice", ScramSHA256}}})
	if _, ok := next.ScramCredential("alice", ScramSHA256); ok {
		t.Fatal("deleted credential still there")
	}
}

func TestListenersCanonical(t *testing.T) {
	s := must(t, cluster3(t), RegisterBroker{ID: 4, KafkaAddr: "h:1", RaftAddr: "h:2", Listeners: "SSL://h:3,PLAINTEXT://h:1"})
	b, _ := s.Broker(4)
	if b.Listeners != "PLAINTEXT://h:1,SSL://h:3" {
		t.Fatalf("listeners %q", b.Listeners)
	}
	for _, bad := range []string{"PLAINTEXT://h:1,PLAINTEXT://h:2", "PLAIN TEXT://h:1", "PLAINTEXT://h", "h:1"} {
		if _, _, err := s.Apply(s.AppliedIndex()+1, RegisterBroker{ID: 5, KafkaAddr: "h:1", RaftAddr: "h:2", Listeners: bad}); !errors.Is(err, ErrInvalidBroker) {
			t.Errorf("%q: %v, want ErrInvalidBroker", bad, err)
		}
	}
}
