package metrics

import (
	"sync/atomic"

	"github.com/minikafka/minikafka-go/record"
)

// Traffic counts one partition replica's client traffic: records and bytes
// produced to it (acknowledged appends while it leads) and fetched from it
// by consumers. Its methods are safe for concurrent use and allocate
// nothing.
type Traffic struct {
	producedRecords, producedBytes atomic.Int64
	fetchedRecords, fetchedBytes   atomic.Int64
}

// Produced counts one appended batch.
func (t *Traffic) Produced(batch []byte) {
	recs, n := countRecords(batch)
	t.producedRecords.Add(recs)
	t.producedBytes.Add(n)
}

// Fetched counts the whole batches a Fetch returned.
func (t *Traffic) Fetched(batches []byte) {
	recs, n := countRecords(batches)
	t.fetchedRecords.Add(recs)
	t.fetchedBytes.Add(n)
}

// TrafficCounts are a Traffic's totals.
type TrafficCounts struct {
	ProducedRecords, ProducedBytes int64
	FetchedRecords, FetchedBytes   int64
}

// Counts reads the totals.
func (t *Traffic) Counts() TrafficCounts {
	return TrafficCounts{
		ProducedRecords: t.producedRecords.Load(), ProducedBytes: t.producedBytes.Load(),
		FetchedRecords: t.fetchedRecords.Load(), FetchedBytes: t.fetchedBytes.Load(),
	}
}

// countRecords walks the batch headers of b: the data records of its whole
// batches (control batches, the transaction markers, hold none) and its
// length.
func countRecords(b []byte) (records, size int64) {
	size = int64(len(b))
	for len(b) > 0 {
		_, rest, h, err := record.Next(b)
		if err != nil {
			break
		}
		if !h.IsControl() {
			records += int64(h.NumRecords)
		}
		b = rest
	}
	return records, size
}
