package metadata

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Listener is one advertised Kafka listener of a broker.
type Listener struct {
	Name string // e.g. PLAINTEXT, SASL_SSL, or any name of [A-Za-z0-9_-]
	Addr string // host:port clients connect to
}

// MaxListeners bounds the listeners of one broker.
const MaxListeners = 16

// ParseListeners reads Kafka's advertised.listeners form,
// NAME://host:port separated by commas. Names must be unique.
func ParseListeners(s string) ([]Listener, error) {
	var out []Listener
	for part := range strings.SplitSeq(s, ",") {
		name, addr, ok := strings.Cut(part, "://")
		if !ok {
			return nil, fmt.Errorf("listener %q is not NAME://host:port", part)
		}
		if err := CheckListenerName(name); err != nil {
			return nil, err
		}
		if err := checkAddr(addr); err != nil {
			return nil, fmt.Errorf("listener %s: %w", name, err)
		}
		if slices.ContainsFunc(out, func(l Listener) bool { return l.Name == name }) {
			return nil, fmt.Errorf("listener %s listed twice", name)
		}
		out = append(out, Listener{Name: name, Addr: addr})
	}
	if len(out) > MaxListeners {
		return nil, fmt.Errorf("%d listeners, at most %d", len(out), MaxListeners)
	}
	return out, nil
}

// FormatListeners writes listeners in ParseListeners' form, sorted by name:
// the canonical form a registration stores.
func FormatListeners(ls []Listener) string {
	ls = slices.Clone(ls)
	slices.SortFunc(ls, func(a, b Listener) int { return cmp.Compare(a.Name, b.Name) })
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.Name + "://" + l.Addr
	}
	return strings.Join(parts, ",")
}

// CheckListenerName accepts 1 to 64 of [A-Za-z0-9_-].
func CheckListenerName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("listener name %q: want 1 to 64 characters", name)
	}
	for _, r := range name {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("listener name %q: only letters, digits, _ and -", name)
		}
	}
	return nil
}
