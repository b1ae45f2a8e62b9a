package acl

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkAuthorize decides a WRITE on a topic against the most bindings
// a cluster holds (10,000): all literal (found by binary search), or all
// prefixed (each check scans the topic type's prefixed range).
func BenchmarkAuthorize(b *testing.B) {
	for _, pat := range []PatternType{PatternLiteral, PatternPrefixed} {
		bs := make([]Binding, 10_000)
		for i := range bs {
			bs[i] = Binding{ResourceType: ResourceTopic, Name: fmt.Sprintf("team-%05d.", i), Pattern: pat,
				Principal: fmt.Sprintf("User:u%d", i), Host: Wildcard, Operation: OpWrite, Permission: PermissionAllow}
		}
		s := NewSet(bs...)
		r := Request{Principal: "User:u9999", Host: "10.0.0.1", Operation: OpWrite, Resource: ResourceTopic, Name: "team-09999.orders"}
		if pat == PatternLiteral {
			r.Name = "team-09999."
		}
		if !(Authorizer{}).Authorize(s, r) {
			b.Fatalf("%v: the request is not allowed", pat)
		}
		b.Run(pat.String(), func(b *testing.B) {
			for b.Loop() {
				(Authorizer{}).Authorize(s, r)
			}
		})
	}
}

// applying visits exactly the bindings whose pattern covers the name,
// whether it scans the prefixed bindings (fewer than the name has
// prefixes) or looks each prefix up (more).
func TestApplyingFindsEveryCoveringBinding(t *testing.T) {
	names := []string{"a", "ab", "abc", "abcd", "b", "ba", "*", "abx", "x"}
	for _, n := range []int{3, 40} { // below and above the length of every name
		var bs []Binding
		for i := range n {
			name := names[i%len(names)]
			for _, pat := range []PatternType{PatternLiteral, PatternPrefixed} {
				for _, rt := range []ResourceType{ResourceTopic, ResourceGroup} {
					bs = append(bs, Binding{ResourceType: rt, Name: name, Pattern: pat, Principal: fmt.Sprintf("User:%d", i),
						Host: Wildcard, Operation: OpRead, Permission: PermissionAllow})
				}
			}
		}
		s := NewSet(bs...)
		for _, name := range append(names, "abcde", "") {
			var got, want []Binding
			s.applying(ResourceTopic, name, func(b Binding) bool { got = append(got, b); return true })
			for _, b := range s.All() {
				covers := b.Pattern == PatternLiteral && (b.Name == name || b.Name == Wildcard) ||
					b.Pattern == PatternPrefixed && strings.HasPrefix(name, b.Name)
				if b.ResourceType == ResourceTopic && covers {
					want = append(want, b)
				}
			}
			if !NewSet(got...).Equal(NewSet(want...)) || len(got) != len(want) {
				t.Errorf("%d bindings, name %q: applying visited %v, want %v", len(bs), name, got, want)
			}
		}
	}
}
