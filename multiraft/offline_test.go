package multiraft

import (
	"errors"
	"path/filepath"
	"testing"
)

// LastIndexOffline reads a closed group's last index from each store, and
// refuses a pebble group's dir against another node's log dir.
func TestLastIndexOffline(t *testing.T) {
	for _, kind := range allStores {
		t.Run(string(kind), func(t *testing.T) {
			dir := t.TempDir()
			s, closeStore := openTestStore(t, dir, kind)
			if err := s.StoreLogs(testLogs(1, 23)); err != nil {
				t.Fatal(err)
			}
			closeStore()
			last, err := LastIndexOffline(dir, filepath.Join(dir, "raftlog"))
			if err != nil || last != 23 {
				t.Fatalf("LastIndexOffline = %d, %v; want 23", last, err)
			}
			if kind != LogStorePebble {
				return
			}
			other := t.TempDir()
			_, closeOther := openTestStore(t, other, kind)
			closeOther()
			if _, err := LastIndexOffline(dir, filepath.Join(other, "raftlog")); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("another node's log dir: %v, want ErrInvalidConfig", err)
			}
		})
	}
}
