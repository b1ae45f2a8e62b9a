package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// reportingFeature is VIRTIO_BALLOON_F_REPORTING's bit in a virtio device's
// features file (one '0'/'1' per bit, bit 0 first).
const reportingFeature = 5

// maxReportOrder is the highest page order the kernel's free page reporting
// can report (NR_PAGE_ORDERS-1 on x86-64); a larger page_reporting_order
// turns reporting off.
const maxReportOrder = 10

// PageReporting tells whether this machine is a VM that hands freed memory
// back to its host (virtio-balloon free page reporting) and from which page
// order. When it does, every page the kernel takes from free memory, the
// page cache's new pages included, is faulted in again by the host on
// first write: a cost the guest sees as a slow copy into the page cache.
func PageReporting() (on bool, order int) {
	return pageReporting("/sys")
}

func pageReporting(sys string) (bool, int) {
	b, err := os.ReadFile(filepath.Join(sys, "module/page_reporting/parameters/page_reporting_order"))
	if err != nil {
		return false, 0
	}
	order, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || order > maxReportOrder {
		return false, order
	}
	devs, _ := filepath.Glob(filepath.Join(sys, "bus/virtio/devices/*"))
	for _, d := range devs {
		drv, err := os.Readlink(filepath.Join(d, "driver"))
		if err != nil || filepath.Base(drv) != "virtio_balloon" {
			continue
		}
		f, err := os.ReadFile(filepath.Join(d, "features"))
		if err == nil && len(f) > reportingFeature && f[reportingFeature] == '1' {
			return true, order
		}
	}
	return false, order
}
