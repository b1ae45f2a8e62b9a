package fsm

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/producerstate"
)

// Producers returns a copy of the producer table.
func (f *FSM) Producers() *producerstate.Table { return f.table.Clone() }

// DowngradeCheckpoint rewrites the checkpoint in dir with its producer
// table in format 1 (no last timestamps), as a node from before them wrote
// it.
func DowngradeCheckpoint(dir string) error { return downgradeCheckpoint(dir, 1) }

// DowngradeCheckpointV2 rewrites the checkpoint in dir with its producer
// table in format 2 (no transactions), as a node from before them wrote
// it. Producers without batches, which format 2 cannot hold, are left out.
func DowngradeCheckpointV2(dir string) error { return downgradeCheckpoint(dir, 2) }

// downgradeCheckpoint rewrites the newest checkpoint in dir with its
// producer table in format (1 or 2), in the single file those nodes
// wrote, and removes the slot files: format 2 adds each producer's last
// timestamp and cannot hold a producer without batches.
func downgradeCheckpoint(dir string, format byte) error {
	path := filepath.Join(dir, checkpointFile)
	cp, ok, _, err := readCheckpoint(vfs.OS, dir)
	if err != nil {
		return err
	}
	if !ok {
		return os.ErrNotExist
	}
	for slot := range cpSlotFiles {
		if err := os.Remove(filepath.Join(dir, cpSlotName(slot))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	t, err := producerstate.Decode(cp.table)
	if err != nil {
		return err
	}
	var n uint32
	var body []byte
	for e := range t.All() {
		if format == 2 && len(e.Batches) == 0 {
			continue
		}
		n++
		body = binary.BigEndian.AppendUint64(body, uint64(e.ProducerID))
		body = binary.BigEndian.AppendUint16(body, uint16(e.Epoch))
		body = binary.BigEndian.AppendUint16(body, uint16(len(e.Batches)))
		if format == 2 {
			body = binary.BigEndian.AppendUint64(body, uint64(e.LastTimestamp))
		}
		for _, bt := range e.Batches {
			body = binary.BigEndian.AppendUint32(body, uint32(bt.FirstSeq))
			body = binary.BigEndian.AppendUint32(body, uint32(bt.LastSeq))
			body = binary.BigEndian.AppendUint64(body, uint64(bt.BaseOffset))
			body = binary.BigEndian.AppendUint32(body, uint32(bt.Count))
		}
	}
	v := binary.BigEndian.AppendUint16([]byte{format}, uint16(t.Window()))
	v = append(binary.BigEndian.AppendUint32(v, n), body...)
	cp.table = binary.BigEndian.AppendUint32(v, crc32.Checksum(v, crcTable))
	return os.WriteFile(path, cp.encode(), 0o644)
}

// WaitCleanings returns once the cleanings queued so far are done.
func (f *FSM) WaitCleanings() { f.cleaner.wait() }
