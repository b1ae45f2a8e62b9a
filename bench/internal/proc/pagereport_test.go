package proc

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeSys builds a /sys tree with a page_reporting_order (omitted when
// order is "") and one virtio device bound to driver with features.
func fakeSys(t *testing.T, order, driver, features string) string {
	t.Helper()
	sys := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(sys, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if order != "" {
		write("module/page_reporting/parameters/page_reporting_order", order+"\n")
	}
	write("bus/drivers/"+driver+"/.keep", "")
	write("bus/virtio/devices/virtio0/features", features+"\n")
	if err := os.Symlink(filepath.Join(sys, "bus/drivers", driver), filepath.Join(sys, "bus/virtio/devices/virtio0/driver")); err != nil {
		t.Fatal(err)
	}
	return sys
}

func TestPageReporting(t *testing.T) {
	const reporting, statsOnly = "01100101000", "01100001000"
	for _, c := range []struct {
		name, order, driver, features string
		on                            bool
	}{
		{"balloon reports from 2 MiB", "9", "virtio_balloon", reporting, true},
		{"order past the largest turns it off", "11", "virtio_balloon", reporting, false},
		{"balloon without the feature", "9", "virtio_balloon", statsOnly, false},
		{"no balloon", "9", "virtio_net", reporting, false},
		{"kernel without page reporting", "", "virtio_balloon", reporting, false},
	} {
		on, _ := pageReporting(fakeSys(t, c.order, c.driver, c.features))
		if on != c.on {
			t.Errorf("%s: on = %v, want %v", c.name, on, c.on)
		}
	}
}
