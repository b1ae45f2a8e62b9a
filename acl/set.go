package acl

import (
	"cmp"
	"slices"
	"sort"
	"strings"
)

// Set is an immutable set of bindings, kept sorted by Compare. Methods that
// change it return a new Set and leave the old one untouched, so a Set may
// be shared between goroutines and held by an immutable snapshot. The zero
// Set is empty.
type Set struct {
	bs []Binding // sorted by Compare, no duplicates; never written once published
}

// NewSet returns the set of bs, sorted, without duplicates.
func NewSet(bs ...Binding) Set {
	c := slices.Clone(bs)
	slices.SortFunc(c, Compare)
	c = slices.Compact(c)
	if len(c) == 0 {
		return Set{}
	}
	return Set{bs: c}
}

// Len is the number of bindings.
func (s Set) Len() int { return len(s.bs) }

// All returns a copy of the bindings, sorted by Compare.
func (s Set) All() []Binding { return slices.Clone(s.bs) }

// Equal reports whether both sets hold the same bindings.
func (s Set) Equal(o Set) bool { return slices.Equal(s.bs, o.bs) }

// Contains reports whether b is in the set.
func (s Set) Contains(b Binding) bool {
	_, ok := slices.BinarySearchFunc(s.bs, b, Compare)
	return ok
}

// Filter returns the bindings f matches, sorted by Compare.
func (s Set) Filter(f Filter) []Binding {
	var out []Binding
	for _, b := range s.bs {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

// With returns the set with bs added (those already present are kept
// once). It does not validate them.
func (s Set) With(bs []Binding) Set {
	return NewSet(append(slices.Clone(s.bs), bs...)...)
}

// Without returns the set without every binding one of the filters
// matches, and per filter the bindings it removed (a binding two filters
// match is reported for both, as Kafka does).
func (s Set) Without(filters []Filter) (Set, [][]Binding) {
	removed := make([][]Binding, len(filters))
	gone := make([]bool, len(s.bs))
	for i, f := range filters {
		for j, b := range s.bs {
			if f.Matches(b) {
				removed[i] = append(removed[i], b)
				gone[j] = true
			}
		}
	}
	var keep []Binding
	for j, b := range s.bs {
		if !gone[j] {
			keep = append(keep, b)
		}
	}
	return Set{bs: keep}, removed
}

// ofType returns the bindings of one resource type: a contiguous range,
// since Compare orders by resource type first.
func (s Set) ofType(rt ResourceType) []Binding {
	lo := sort.Search(len(s.bs), func(i int) bool { return s.bs[i].ResourceType >= rt })
	hi := sort.Search(len(s.bs), func(i int) bool { return s.bs[i].ResourceType > rt })
	return s.bs[lo:hi]
}

// of returns the bindings of one resource type, pattern type and name:
// contiguous too, found by binary search.
func (s Set) of(rt ResourceType, pat PatternType, name string) []Binding {
	key := func(b Binding) int {
		return cmp.Or(cmp.Compare(b.ResourceType, rt), cmp.Compare(b.Pattern, pat), cmp.Compare(b.Name, name))
	}
	lo := sort.Search(len(s.bs), func(i int) bool { return key(s.bs[i]) >= 0 })
	hi := sort.Search(len(s.bs), func(i int) bool { return key(s.bs[i]) > 0 })
	return s.bs[lo:hi]
}

// applying calls fn with each binding whose pattern covers the named
// resource of type rt, until fn returns false: the LITERAL ones of the
// name and of "*" by binary search, the PREFIXED ones by a scan of that
// type's prefixed range or, when it holds more bindings than the name has
// prefixes, by a binary search for each prefix.
func (s Set) applying(rt ResourceType, name string, fn func(Binding) bool) {
	for _, b := range s.of(rt, PatternLiteral, name) {
		if !fn(b) {
			return
		}
	}
	if name != Wildcard {
		for _, b := range s.of(rt, PatternLiteral, Wildcard) {
			if !fn(b) {
				return
			}
		}
	}
	bs := s.ofType(rt)
	lo := sort.Search(len(bs), func(i int) bool { return bs[i].Pattern >= PatternPrefixed })
	hi := sort.Search(len(bs), func(i int) bool { return bs[i].Pattern > PatternPrefixed })
	if prefixed := bs[lo:hi]; len(prefixed) <= len(name) {
		for _, b := range prefixed {
			if strings.HasPrefix(name, b.Name) && !fn(b) {
				return
			}
		}
		return
	}
	// More prefixed bindings than the name has prefixes: look each
	// prefix up by binary search instead of scanning them all.
	for k := 1; k <= len(name); k++ {
		for _, b := range s.of(rt, PatternPrefixed, name[:k]) {
			if !fn(b) {
				return
			}
		}
	}
}
