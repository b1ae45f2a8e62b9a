package replicas

import (
	"testing"

	"github.com/minikafka/minikafka-go/partition/seglog"
)

func TestRetentionPoint(t *testing.T) {
	segs := []seglog.SegmentInfo{
		{Base: 0, Next: 10, Bytes: 100, MaxTimestamp: 1000},
		{Base: 10, Next: 20, Bytes: 100, MaxTimestamp: 2000},
		{Base: 20, Next: 25, Bytes: 50, MaxTimestamp: 3000, Active: true},
	}
	empty := append(segs[:2:2], seglog.SegmentInfo{Base: 20, Next: 20, MaxTimestamp: -1, Active: true})
	tests := []struct {
		name                string
		segs                []seglog.SegmentInfo
		now, ms, bytes, out int64
	}{
		{"nothing expired", segs, 1500, 1000, -1, -1},
		{"first expired", segs, 2001, 1000, -1, 10},
		{"up to the active one", segs, 3500, 1000, -1, 20},
		{"all, active too", segs, 4001, 1000, -1, 25},
		{"newer segment stops the walk", []seglog.SegmentInfo{segs[1], {Base: 20, Next: 30, Bytes: 5, MaxTimestamp: 100}}, 2500, 1000, -1, -1},
		{"forever", segs, 1 << 40, -1, -1, -1},
		{"size fits", segs, 0, -1, 250, -1},
		{"size: one segment must go", segs, 0, -1, 150, 10},
		{"size: deleting would go below the limit", segs, 0, -1, 200, -1},
		{"size: two must go", segs, 0, -1, 50, 20},
		{"size: keeps at least the limit", segs, 0, -1, 60, 10},
		{"size zero: everything", segs, 0, -1, 0, 25},
		{"the larger of both", segs, 2001, 1000, 50, 20},
		{"empty active segment stays", empty, 1 << 40, 0, -1, 20},
	}
	for _, tt := range tests {
		if got := retentionPoint(tt.segs, tt.now, tt.ms, tt.bytes); got != tt.out {
			t.Errorf("%s: retentionPoint = %d, want %d", tt.name, got, tt.out)
		}
	}
}
