package record

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkProduceChecks measures what the leader checks in a produced
// batch before proposing it (produceChecks), for batches of many small
// records, where walking the records costs most relative to the CRC.
func BenchmarkProduceChecks(b *testing.B) {
	for _, shape := range []struct{ records, size int }{{1, 1000}, {100, 100}, {1000, 10}} {
		for _, codec := range []int{CompressionNone, CompressionLZ4} {
			recs := make([]Record, shape.records)
			for i := range recs {
				recs[i] = Record{Timestamp: int64(i), Value: bytes.Repeat([]byte{byte(i)}, shape.size)}
			}
			batch, err := AppendBatch(nil, PlainBatch(codec), recs)
			if err != nil {
				b.Fatal(err)
			}
			name := fmt.Sprintf("%dx%dB/%s", shape.records, shape.size, CodecName(codec))
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(batch)))
				b.ReportAllocs()
				for b.Loop() {
					if err := produceChecks(batch); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// produceChecks is what kafkaapi checks in a produced batch.
func produceChecks(b []byte) error {
	h, err := CheckProduce(b)
	if err != nil {
		return err
	}
	return CheckRecordCount(b, h)
}
