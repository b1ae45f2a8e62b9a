package record

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestEndTxnMarkerMatchesKafka builds markers and reads them back, and
// checks with kmsg that the bytes are Kafka's EndTransactionMarker
// control batch.
func TestEndTxnMarkerMatchesKafka(t *testing.T) {
	for _, m := range []EndTxnMarker{{ControlAbort, 0}, {ControlCommit, 7}} {
		b := AppendEndTxnMarker(nil, 42, 3, 1234, m)
		h, err := Check(b)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if !h.IsControl() || !h.IsTransactional() || h.ProducerID != 42 || h.ProducerEpoch != 3 ||
			h.BaseSequence != -1 || h.NumRecords != 1 || h.MaxTimestamp != 1234 || h.Compression() != 0 {
			t.Fatalf("header %+v", h)
		}
		got, err := ParseEndTxnMarker(b)
		if err != nil || got != m {
			t.Fatalf("ParseEndTxnMarker = %+v, %v; want %+v", got, err, m)
		}
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		var rec kmsg.Record
		if err := rec.ReadFrom(kb.Records); err != nil {
			t.Fatal(err)
		}
		var key kmsg.ControlRecordKey
		var value kmsg.EndTxnMarker
		if err := key.ReadFrom(rec.Key); err != nil {
			t.Fatal(err)
		}
		if err := value.ReadFrom(rec.Value); err != nil {
			t.Fatal(err)
		}
		if key.Version != 0 || int16(key.Type) != int16(m.Type) || value.Version != 0 ||
			value.CoordinatorEpoch != m.CoordinatorEpoch || rec.TimestampDelta64 != 0 {
			t.Fatalf("kmsg reads key %+v value %+v", key, value)
		}
	}
}

func TestParseEndTxnMarkerRejects(t *testing.T) {
	data, err := AppendBatch(nil, PlainBatch(0), []Record{{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseEndTxnMarker(data); !errors.Is(err, ErrNotMarker) {
		t.Fatalf("data batch: %v, want ErrNotMarker", err)
	}
	bad := AppendEndTxnMarker(nil, 1, 0, 0, EndTxnMarker{Type: 5})
	if _, err := ParseEndTxnMarker(bad); !errors.Is(err, ErrNotMarker) {
		t.Fatalf("type 5: %v, want ErrNotMarker", err)
	}
}
