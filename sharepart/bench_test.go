package sharepart

import "testing"

// BenchmarkAcquireAcceptSnapshot is one share-fetch round on a busy share
// partition: acquire 100 records, accept them, and encode the snapshot
// that is written before the answer.
func BenchmarkAcquireAcceptSnapshot(b *testing.B) {
	cfg := Config{LockDurationMs: 30000, DeliveryLimit: 5, MaxLocks: 2000}
	p := New(cfg, 0, 0)
	p.Acquire("slow", 0, 0, 1000, 1000) // a slow member keeps 1000 records in flight
	end := int64(1000)
	for b.Loop() {
		end += 100
		rs := p.Acquire("m", 0, 0, end, 100)
		for _, r := range rs {
			_ = p.Acknowledge("m", r.First, r.Last, []AckType{AckAccept}, 0)
		}
		_ = EncodeValue(p.Snapshot(1))
		if p.EndOffset()-p.StartOffset() >= int64(cfg.MaxLocks)-100 { // the window is full: start over
			p = New(cfg, end, 0)
			p.Acquire("slow", 0, 0, end+1000, 1000)
			end += 1000
		}
	}
}
