package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// diskSource is a node whose only state is its disk.
type diskSource struct{ disk Disk }

func (s diskSource) Ready() error { return nil }
func (s diskSource) State() State { return State{NodeID: 1, ControllerID: 1, Disk: s.disk} }

// The data disk's space and the node's view of it reach /metrics, under
// Redpanda's names, and the status page, for each alert level.
func TestDiskSpaceOnMetricsAndStatusPage(t *testing.T) {
	for _, c := range []struct {
		disk  Disk
		alert string
		page  string
	}{
		{Disk{Total: 128 << 20, Free: 100 << 20, Reserve: 6 << 20, AlertAt: 12 << 20}, "0", "Enough free space."},
		{Disk{Total: 128 << 20, Free: 10 << 20, Reserve: 6 << 20, AlertAt: 12 << 20, Low: true}, "1", "Low on space."},
		{Disk{Total: 128 << 20, Free: 5 << 20, Reserve: 6 << 20, AlertAt: 12 << 20, Low: true, Refusing: true}, "2", "produce and new partitions are refused"},
	} {
		src := diskSource{c.disk}
		srv := httptest.NewServer(Handler(New(src), src))
		metricsText := fetch(t, srv.URL+"/metrics")
		for _, want := range []string{
			"minikafka_storage_disk_total_bytes 1.34217728e+08",
			"minikafka_storage_disk_min_free_bytes 6.291456e+06",
			"minikafka_storage_disk_alert_free_bytes 1.2582912e+07",
			"minikafka_storage_disk_free_space_alert " + c.alert,
		} {
			if !strings.Contains(metricsText, want+"\n") {
				t.Errorf("free %d: /metrics lacks %q", c.disk.Free, want)
			}
		}
		if page := fetch(t, srv.URL+"/"); !strings.Contains(page, c.page) || !strings.Contains(page, `id="disk"`) {
			t.Errorf("free %d: the status page lacks %q", c.disk.Free, c.page)
		}
		srv.Close()
	}
}

func fetch(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
