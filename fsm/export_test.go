package fsm

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/minikafka/minikafka-go/producerstate"
)

// Producers returns a copy of the producer table.
func (f *FSM) Producers() *producerstate.Table { return f.table.Clone() }

// DowngradeCheckpoint rewrites the checkpoint in dir with its producer
// table in format 1 (no last timestamps), as a node from before them wrote
// it.
func DowngradeCheckpoint(dir string) error {
	path := filepath.Join(dir, checkpointFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	cp, err := decodeCheckpoint(b)
	if err != nil {
		return err
	}
	t, err := producerstate.Decode(cp.table)
	if err != nil {
		return err
	}
	var n uint32
	for range t.All() {
		n++
	}
	v1 := binary.BigEndian.AppendUint16([]byte{1}, uint16(t.Window()))
	v1 = binary.BigEndian.AppendUint32(v1, n)
	for e := range t.All() {
		v1 = binary.BigEndian.AppendUint64(v1, uint64(e.ProducerID))
		v1 = binary.BigEndian.AppendUint16(v1, uint16(e.Epoch))
		v1 = binary.BigEndian.AppendUint16(v1, uint16(len(e.Batches)))
		for _, bt := range e.Batches {
			v1 = binary.BigEndian.AppendUint32(v1, uint32(bt.FirstSeq))
			v1 = binary.BigEndian.AppendUint32(v1, uint32(bt.LastSeq))
			v1 = binary.BigEndian.AppendUint64(v1, uint64(bt.BaseOffset))
			v1 = binary.BigEndian.AppendUint32(v1, uint32(bt.Count))
		}
	}
	cp.table = binary.BigEndian.AppendUint32(v1, crc32.Checksum(v1, crcTable))
	return os.WriteFile(path, cp.encode(), 0o644)
}

// DowngradeCheckpointV2 rewrites the checkpoint in dir with its producer
// table in format 2 (no transactions), as a node from before them wrote
// it. Producers without batches, which format 2 cannot hold, are left out.
func DowngradeCheckpointV2(dir string) error {
	path := filepath.Join(dir, checkpointFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	cp, err := decodeCheckpoint(b)
	if err != nil {
		return err
	}
	t, err := producerstate.Decode(cp.table)
	if err != nil {
		return err
	}
	var n uint32
	var body []byte
	for e := range t.All() {
		if len(e.Batches) == 0 {
			continue
		}
		n++
		body = binary.BigEndian.AppendUint64(body, uint64(e.ProducerID))
		body = binary.BigEndian.AppendUint16(body, uint16(e.Epoch))
		body = binary.BigEndian.AppendUint16(body, uint16(len(e.Batches)))
		body = binary.BigEndian.AppendUint64(body, uint64(e.LastTimestamp))
		for _, bt := range e.Batches {
			body = binary.BigEndian.AppendUint32(body, uint32(bt.FirstSeq))
			body = binary.BigEndian.AppendUint32(body, uint32(bt.LastSeq))
			body = binary.BigEndian.AppendUint64(body, uint64(bt.BaseOffset))
			body = binary.BigEndian.AppendUint32(body, uint32(bt.Count))
		}
	}
	v2 := binary.BigEndian.AppendUint16([]byte{2}, uint16(t.Window()))
	v2 = append(binary.BigEndian.AppendUint32(v2, n), body...)
	cp.table = binary.BigEndian.AppendUint32(v2, crc32.Checksum(v2, crcTable))
	return os.WriteFile(path, cp.encode(), 0o644)
}
