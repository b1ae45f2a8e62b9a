package scram

import (
	"context"
	"errors"
	"testing"

	kscram "github.com/twmb/franz-go/pkg/sasl/scram"
)

// converse runs franz-go's SCRAM client against a ServerConversation.
func converse(t *testing.T, m Mechanism, stored map[string]Credential, user, pass string) error {
	t.Helper()
	auth := kscram.Auth{User: user, Pass: pass}
	mech := auth.AsSha256Mechanism()
	if m == SHA512 {
		mech = auth.AsSha512Mechanism()
	}
	sess, msg, err := mech.Authenticate(context.Background(), "h:1")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServerConversation(m, func(u string) (Credential, bool) { c, ok := stored[u]; return c, ok })
	for {
		resp, done, err := srv.Step(msg)
		if err != nil {
			return err
		}
		cdone, next, err := sess.Challenge(resp)
		if err != nil {
			t.Fatalf("client rejected the server: %v", err)
		}
		if done {
			if !cdone {
				t.Fatal("server done, client not")
			}
			if srv.User() != user {
				t.Fatalf("user %q", srv.User())
			}
			return nil
		}
		msg = next
	}
}

func TestConversationWithFranzGo(t *testing.T) {
	for _, m := range []Mechanism{SHA256, SHA512} {
		t.Run(m.String(), func(t *testing.T) {
			c, err := NewCredential(m, "s3cret", DefaultIterations)
			if err != nil {
				t.Fatal(err)
			}
			stored := map[string]Credential{"al,i=ce": c}
			if err := converse(t, m, stored, "al,i=ce", "s3cret"); err != nil {
				t.Fatalf("good password: %v", err)
			}
			if err := converse(t, m, stored, "al,i=ce", "wrong"); !errors.Is(err, ErrAuthFailed) {
				t.Fatalf("wrong password: %v", err)
			}
			if err := converse(t, m, stored, "bob", "s3cret"); !errors.Is(err, ErrAuthFailed) {
				t.Fatalf("unknown user: %v", err)
			}
			if !Verify(m, c, "s3cret") || Verify(m, c, "wrong") {
				t.Fatal("Verify")
			}
		})
	}
}

func TestConversationProtocolErrors(t *testing.T) {
	c, _ := NewCredential(SHA256, "p", DefaultIterations)
	lookup := func(string) (Credential, bool) { return c, true }
	for _, msg := range []string{"", "x,,n=a,r=b", "p=tls-unique,,n=a,r=b", "n,,r=b,n=a", "n,,n=a=ZZ,r=b", "n,,n=a"} {
		if _, _, err := NewServerConversation(SHA256, lookup).Step([]byte(msg)); !errors.Is(err, ErrProtocol) {
			t.Errorf("%q: %v, want ErrProtocol", msg, err)
		}
	}
	s := NewServerConversation(SHA256, lookup)
	if _, _, err := s.Step([]byte("n,,n=a,r=abc")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Step([]byte("c=biws,r=wrongnonce,p=AAAA")); !errors.Is(err, ErrProtocol) {
		t.Fatalf("wrong nonce: %v", err)
	}
	if _, _, err := s.Step([]byte("again")); !errors.Is(err, ErrProtocol) {
		t.Fatalf("after the end: %v", err)
	}
}
