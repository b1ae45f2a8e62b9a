package metadata

import (
	"errors"
	"fmt"
	"testing"

	"github.com/minikafka/minikafka-go/acl"
)

// sampleBinding is a valid binding for a user.
func sampleBinding(user string) acl.Binding {
	return acl.Binding{ResourceType: acl.ResourceTopic, Name: "orders", Pattern: acl.PatternLiteral,
		Principal: "User:" + user, Host: acl.Wildcard, Operation: acl.OpRead, Permission: acl.PermissionAllow}
}

func TestCreateDeleteACLs(t *testing.T) {
	s := cluster3(t)
	bad := sampleBinding("x")
	bad.Pattern = acl.PatternMatch
	next, res, err := s.Apply(s.AppliedIndex()+1, CreateACLs{Bindings: []acl.Binding{sampleBinding("alice"), bad, sampleBinding("alice"), sampleBinding("bob")}})
	if err != nil {
		t.Fatal(err)
	}
	errs := res.(CreateACLsResult).Errs
	if len(errs) != 4 || errs[0] != nil || !errors.Is(errs[1], acl.ErrInvalid) || errs[2] != nil || errs[3] != nil {
		t.Fatalf("errs %v", errs)
	}
	if next.ACLs().Len() != 2 || s.ACLs().Len() != 0 {
		t.Fatalf("stored %v; the old state has %d", next.ACLs().All(), s.ACLs().Len())
	}
	if err := next.check(); err != nil {
		t.Fatal(err)
	}
	// Creating a stored binding again succeeds and changes nothing.
	again := must(t, next, CreateACLs{Bindings: []acl.Binding{sampleBinding("bob")}})
	if !again.ACLs().Equal(next.ACLs()) {
		t.Fatal("a repeated creation changed the set")
	}

	alice := "User:alice"
	_, res, err = next.Apply(next.AppliedIndex()+1, DeleteACLs{Filters: []acl.Filter{
		{ResourceType: acl.ResourceAny, Pattern: acl.PatternAny, Principal: &alice, Operation: acl.OpAny, Permission: acl.PermissionAny},
		{ResourceType: 0, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny},
	}})
	if err != nil {
		t.Fatal(err)
	}
	dr := res.(DeleteACLsResult)
	if len(dr.Removed[0]) != 1 || dr.Removed[0][0] != sampleBinding("alice") || dr.Errs[0] != nil ||
		!errors.Is(dr.Errs[1], acl.ErrInvalid) || dr.Removed[1] != nil {
		t.Fatalf("delete result %+v", dr)
	}
	after := must(t, next, DeleteACLs{Filters: []acl.Filter{{ResourceType: acl.ResourceAny, Pattern: acl.PatternAny, Principal: &alice, Operation: acl.OpAny, Permission: acl.PermissionAny}}})
	if after.ACLs().Len() != 1 || after.ACLs().Contains(sampleBinding("alice")) {
		t.Fatalf("after delete %v", after.ACLs().All())
	}
}

func TestCreateACLsCap(t *testing.T) {
	bs := make([]acl.Binding, acl.MaxBindings+2)
	for i := range bs {
		bs[i] = sampleBinding(fmt.Sprintf("u%05d", i))
	}
	s := must(t, cluster3(t), CreateACLs{Bindings: bs[:acl.MaxBindings-1]})
	next, res, err := s.Apply(s.AppliedIndex()+1, CreateACLs{Bindings: bs[acl.MaxBindings-1:]})
	if err != nil {
		t.Fatal(err)
	}
	errs := res.(CreateACLsResult).Errs
	if errs[0] != nil || !errors.Is(errs[1], acl.ErrTooMany) || !errors.Is(errs[2], acl.ErrTooMany) {
		t.Fatalf("errors at the cap: %v", errs)
	}
	if next.ACLs().Len() != acl.MaxBindings {
		t.Fatalf("%d bindings stored", next.ACLs().Len())
	}
	// A stored binding may still be created again at the cap.
	if _, res, _ := next.Apply(next.AppliedIndex()+1, CreateACLs{Bindings: bs[:1]}); res.(CreateACLsResult).Errs[0] != nil {
		t.Fatal("re-creating a stored binding at the cap failed")
	}
	b, _ := next.MarshalBinary()
	got, err := DecodeSnapshot(b)
	if err != nil || !got.Equal(next) {
		t.Fatalf("snapshot round trip at the cap: %v", err)
	}
}

func TestSnapshotRejectsUnsortedACLs(t *testing.T) {
	s := must(t, cluster3(t), CreateACLs{Bindings: []acl.Binding{sampleBinding("a"), sampleBinding("b")}})
	b, _ := s.MarshalBinary()
	// The two bindings are the last bytes; they differ only in the user's
	// last letter, so swapping those letters unsorts them.
	i, j := len(b)-1, len(b)-1
	for k := len(b) - 1; k >= 0; k-- {
		if b[k] == 'b' {
			j = k
			break
		}
	}
	for k := j - 1; k >= 0; k-- {
		if b[k] == 'a' && string(b[k-5:k]) == "User:" {
			i = k
			break
		}
	}
	b[i], b[j] = b[j], b[i]
	if _, err := DecodeSnapshot(b); !errors.Is(err, ErrMalformedSnapshot) {
		t.Fatalf("unsorted bindings: %v", err)
	}
}

func TestACLCommandSizeBounds(t *testing.T) {
	s := cluster3(t)
	if _, _, err := s.Apply(s.AppliedIndex()+1, DeleteACLs{Filters: make([]acl.Filter, acl.MaxFilters+1)}); !errors.Is(err, acl.ErrTooMany) {
		t.Fatalf("too many filters: %v", err)
	}
	if _, _, err := s.Apply(s.AppliedIndex()+1, CreateACLs{Bindings: make([]acl.Binding, acl.MaxBindings+1)}); !errors.Is(err, acl.ErrTooMany) {
		t.Fatalf("too many bindings: %v", err)
	}
}
