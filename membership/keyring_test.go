package membership

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// memberIDs lists the ids m sees, sorted.
func memberIDs(m *Membership) []int32 {
	var ids []int32
	for _, n := range m.Members() {
		ids = append(ids, n.ID)
	}
	slices.Sort(ids)
	return ids
}

// With a key and a label, members that share both find each other; a node
// without the key, with another key, or with the key but another label is
// ignored both ways: its join fails, a join towards it fails, and nobody
// lists it.
func TestGossipKeyringIgnoresStrangers(t *testing.T) {
	key, other := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 16)
	secure := func(id int32, keys [][]byte, label string) Config {
		c := fastConfig(id)
		c.Keys, c.Label = keys, label
		return c
	}
	// The second key only decrypts: node 2 encrypts with key, node 1 with other.
	m1 := start(t, secure(1, [][]byte{other, key}, "prod"))
	m2 := start(t, secure(2, [][]byte{key, other}, "prod"))
	if _, err := m2.Join(ctxFor(t, 5*time.Second), []string{m1.LocalAddr()}); err != nil {
		t.Fatalf("a member with the keys cannot join: %v", err)
	}
	waitFor(t, 5*time.Second, func() string {
		if a, b := memberIDs(m1), memberIDs(m2); !slices.Equal(a, []int32{1, 2}) || !slices.Equal(b, []int32{1, 2}) {
			return fmt.Sprintf("members %v and %v", a, b)
		}
		return ""
	})
	strangers := []struct {
		name string
		cfg  Config
	}{
		{"no key", secure(3, nil, "prod")},
		{"another key", secure(4, [][]byte{bytes.Repeat([]byte{3}, 32)}, "prod")},
		{"another label", secure(5, [][]byte{key}, "test")},
		{"no label", secure(6, [][]byte{key}, "")},
	}
	for _, s := range strangers {
		t.Run(s.name, func(t *testing.T) {
			m := start(t, s.cfg)
			if n, err := m.Join(ctxFor(t, 500*time.Millisecond), []string{m1.LocalAddr()}); err == nil || n != 0 {
				t.Errorf("the stranger joined %d: %v", n, err)
			}
			if n, err := m1.Join(ctxFor(t, 500*time.Millisecond), []string{m.LocalAddr()}); err == nil || n != 0 {
				t.Errorf("joined the stranger %d: %v", n, err)
			}
			for _, mm := range []*Membership{m1, m2} {
				if got := memberIDs(mm); !slices.Equal(got, []int32{1, 2}) {
					t.Errorf("members %v, want [1 2]", got)
				}
			}
			if got := memberIDs(m); !slices.Equal(got, []int32{s.cfg.Meta.ID}) {
				t.Errorf("the stranger sees %v", got)
			}
		})
	}
}

func TestConfigRejectsBadKeysAndLabels(t *testing.T) {
	for _, c := range []Config{
		{Meta: testMeta(1), Keys: [][]byte{make([]byte, 32), make([]byte, 15)}},
		{Meta: testMeta(1), Label: string(make([]byte, 256))},
	} {
		if _, err := New(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New with keys of %d bytes, label of %d: %v, want ErrInvalidConfig", len(c.Keys), len(c.Label), err)
		}
	}
}
