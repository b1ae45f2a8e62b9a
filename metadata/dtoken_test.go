package metadata

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"
)

// token is a well-formed token of owner, issued at 1000, expiring at 2000,
// never past 5000.
func token(id, owner string, renewers ...string) DelegationToken {
	return DelegationToken{TokenID: id, Owner: owner, Requester: owner, Renewers: renewers,
		IssueMs: 1000, MaxMs: 5000, ExpiryMs: 2000,
		Credentials: []ScramCredential{cred(id, ScramSHA256), cred(id, ScramSHA512)}}
}

func wantTokenErr(t *testing.T, s *Snapshot, cmd Command, want error) {
	t.Helper()
	if _, _, err := step(t, s, cmd); !errors.Is(err, want) {
		t.Fatalf("Apply(%+v) = %v, want %v", cmd, err, want)
	}
}

func TestDelegationTokenRenewAndExpire(t *testing.T) {
	s := must(t, cluster3(t), CreateDelegationToken{Token: token("t1", "User:alice", "User:bob")})
	if got, ok := s.DelegationToken("t1"); !ok || !got.equal(token("t1", "User:alice", "User:bob")) {
		t.Fatalf("stored %+v, %v", got, ok)
	}
	wantTokenErr(t, s, CreateDelegationToken{Token: token("t1", "User:carol")}, ErrInvalidDelegationToken)

	renew := func(who string, now, period int64) UpdateDelegationToken {
		return UpdateDelegationToken{TokenID: "t1", Principal: who, NowMs: now, PeriodMs: period}
	}
	expire := func(who string, now, period int64) UpdateDelegationToken {
		return UpdateDelegationToken{TokenID: "t1", Principal: who, Expire: true, NowMs: now, PeriodMs: period}
	}
	wantTokenErr(t, s, renew("User:mallory", 1500, 1000), ErrDelegationTokenOwnerMismatch)
	// A requester that is neither owner nor renewer may not renew.
	byBob := token("t9", "User:carol")
	byBob.Requester = "User:bob"
	s9 := must(t, s, CreateDelegationToken{Token: byBob})
	wantTokenErr(t, s9, UpdateDelegationToken{TokenID: "t9", Principal: "User:bob", NowMs: 1500, PeriodMs: 10}, ErrDelegationTokenOwnerMismatch)
	wantTokenErr(t, s, expire("User:mallory", 1500, 1000), ErrDelegationTokenOwnerMismatch)
	wantTokenErr(t, s, UpdateDelegationToken{TokenID: "nope", Principal: "User:alice", NowMs: 1500}, ErrDelegationTokenNotFound)
	// Past the expiry a renewal fails; the renewer check comes after.
	wantTokenErr(t, s, renew("User:mallory", 2001, 1000), ErrDelegationTokenExpired)

	// A renewer renews; the expiry is capped by the maximum.
	next, res, err := step(t, s, renew("User:bob", 1500, 1000))
	if err != nil || res.(DelegationTokenResult).ExpiryMs != 2500 {
		t.Fatalf("renew = %v, %v", res, err)
	}
	next, res, _ = step(t, next, renew("User:alice", 2400, 10000))
	if got, _ := next.DelegationToken("t1"); res.(DelegationTokenResult).ExpiryMs != 5000 || got.ExpiryMs != 5000 {
		t.Fatalf("renew past max = %v, stored %d", res, got.ExpiryMs)
	}
	// Expire with a period shortens it; a negative one removes it.
	next, res, _ = step(t, next, expire("User:alice", 3000, 0))
	if res.(DelegationTokenResult).ExpiryMs != 3000 {
		t.Fatalf("expire now = %v", res)
	}
	// A proposer whose clock is behind the issue time expires it at issue.
	if early, res, err := step(t, next, expire("User:alice", 900, 0)); err != nil || res.(DelegationTokenResult).ExpiryMs != 1000 {
		t.Fatalf("expire before issue = %v, %v", res, err)
	} else if ids := early.DelegationTokenIDs(); len(ids) != 1 || ids[0] != "t1" {
		t.Fatalf("ids %v", ids)
	}
	// Past its expiry, even a negative period is refused (Kafka's order).
	wantTokenErr(t, next, expire("User:alice", 3001, 10), ErrDelegationTokenExpired)
	wantTokenErr(t, next, expire("User:alice", 3001, -1), ErrDelegationTokenExpired)
	next, res, _ = step(t, next, expire("User:alice", 3000, -1))
	if _, ok := next.DelegationToken("t1"); ok || res.(DelegationTokenResult).ExpiryMs != -1 {
		t.Fatalf("negative expire = %v; token still there: %v", res, ok)
	}
}

func TestDelegationTokenBounds(t *testing.T) {
	s := cluster3(t)
	many := token("t", "User:alice")
	for i := range MaxDelegationTokenRenewers + 1 {
		many.Renewers = append(many.Renewers, fmt.Sprintf("User:r%d", i))
	}
	wantTokenErr(t, s, CreateDelegationToken{Token: many}, ErrTooManyDelegationTokenRenewers)
	bad := token("t", "alice")
	wantTokenErr(t, s, CreateDelegationToken{Token: bad}, ErrInvalidDelegationToken)
	bad = token("t", "User:alice")
	bad.Credentials[0].User = "other"
	wantTokenErr(t, s, CreateDelegationToken{Token: bad}, ErrInvalidDelegationToken)

	for i := range MaxDelegationTokensPerOwner {
		var err error
		if s, _, err = s.Apply(s.index+1, CreateDelegationToken{Token: token(fmt.Sprintf("a%04d", i), "User:alice")}); err != nil {
			t.Fatal(err)
		}
	}
	wantTokenErr(t, s, CreateDelegationToken{Token: token("one-more", "User:alice")}, ErrTooManyDelegationTokens)
	must(t, s, CreateDelegationToken{Token: token("bobs", "User:bob")})
}

func TestExpireDelegationTokens(t *testing.T) {
	long := token("long", "User:alice")
	long.ExpiryMs = 4000
	s := must(t, cluster3(t), CreateDelegationToken{Token: token("short", "User:alice")}, CreateDelegationToken{Token: long})
	if s.HasExpiredDelegationTokens(2000) || !s.HasExpiredDelegationTokens(2001) {
		t.Fatal("HasExpiredDelegationTokens disagrees with the expiry")
	}
	next, res, err := step(t, s, ExpireDelegationTokens{NowMs: 2001})
	if err != nil || !reflect.DeepEqual(res, ExpireDelegationTokensResult{Removed: []string{"short"}}) {
		t.Fatalf("sweep = %v, %v", res, err)
	}
	if ids := next.DelegationTokens(); len(ids) != 1 || ids[0].TokenID != "long" {
		t.Fatalf("left %+v", ids)
	}
	next = must(t, next, ExpireDelegationTokens{NowMs: 4001})
	if len(next.DelegationTokens()) != 0 || next.tokens != nil {
		t.Fatal("sweep past every expiry left tokens")
	}
}

// tokenScenario creates, renews, expires and sweeps tokens.
func tokenScenario() []Command {
	return []Command{
		InitCluster{ClusterID: "c1"}, broker(1),
		CreateDelegationToken{Token: token("t1", "User:alice", "User:bob")},
		CreateDelegationToken{Token: token("t2", "User:carol")},
		CreateDelegationToken{Token: token("t3", "User:carol")},
		UpdateDelegationToken{TokenID: "t1", Principal: "User:bob", NowMs: 1500, PeriodMs: 2000},
		UpdateDelegationToken{TokenID: "t2", Principal: "User:bob", NowMs: 1500, PeriodMs: 2000}, // rejected
		UpdateDelegationToken{TokenID: "t3", Principal: "User:carol", Expire: true, NowMs: 1500, PeriodMs: -1},
		ExpireDelegationTokens{NowMs: 2100},
	}
}

func TestDelegationTokensReplicateAndRestore(t *testing.T) {
	for _, c := range tokenScenario() {
		b := mustEncode(t, c)
		if d, err := Decode(b); err != nil || !reflect.DeepEqual(d, c) {
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v", c, d, err)
		}
	}
	a, b := NewFSM(quiet()), NewFSM(quiet())
	for _, l := range logs(t, tokenScenario()) {
		if ra, rb := a.Apply(l), b.Apply(l); !reflect.DeepEqual(ra, rb) {
			t.Fatalf("index %d: results %#v and %#v", l.Index, ra, rb)
		}
	}
	if !a.State().Equal(b.State()) {
		t.Fatal("replicas differ")
	}
	ids := a.State().DelegationTokens()
	if len(ids) != 1 || ids[0].TokenID != "t1" || ids[0].ExpiryMs != 3500 {
		t.Fatalf("tokens %+v, want t1 renewed to 3500", ids)
	}

	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	dst := NewFSM(quiet())
	if err := dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if !dst.State().Equal(a.State()) {
		t.Fatal("restored state differs")
	}
	if got, _ := dst.State().DelegationToken("t1"); !got.equal(ids[0]) {
		t.Fatalf("restored t1 %+v", got)
	}
	// Tokens out of order are not a canonical snapshot.
	enc, _ := a.State().MarshalBinary()
	two := must(t, a.State(), CreateDelegationToken{Token: token("t0", "User:dan")})
	enc2, _ := two.MarshalBinary()
	if bytes.Equal(enc, enc2) {
		t.Fatal("a new token did not change the encoding")
	}
	swapped := bytes.Replace(enc2, []byte("t0"), []byte("t9"), -1)
	if _, err := DecodeSnapshot(swapped); !errors.Is(err, ErrMalformedSnapshot) {
		t.Fatalf("tokens out of order decoded: %v", err)
	}
}
