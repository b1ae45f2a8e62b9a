package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/producerstate"
	"github.com/minikafka/minikafka-go/record"
)

// Snapshot stream format, version 1:
//
//	"MKPS" | version u8 | form u8 | index u64 | term u64 | start i64 | end i64 |
//	dataBytes i64 | tableLen u32 | table | crc32c u32 (of everything before it)
//	[form full only: dataBytes bytes of stored batches, offsets start..end)
//
// Persist writes the reference form: the log's bytes stay in the log, which
// is append-only below end, so a local snapshot costs a header, not a copy
// of the partition. OpenSnapshot expands a reference into the full form,
// which is what followers install and what Restore reads.
const (
	snapshotMagic   = "MKPS"
	snapshotVersion = 1

	formReference = 1
	formFull      = 2

	snapshotFixed = 4 + 1 + 1 + 8*5 + 4
)

// ErrSnapshotCorrupt means a snapshot stream failed its checks.
var ErrSnapshotCorrupt = errors.New("fsm: corrupt snapshot")

// ErrSnapshotTrimmed means a stored snapshot refers to log data that a
// trim has since deleted; it cannot be sent until a newer snapshot is
// taken (the replica takes one after every trim).
var ErrSnapshotTrimmed = errors.New("fsm: snapshot refers to trimmed data")

type snapshotHeader struct {
	form       byte
	cp         checkpoint
	dataBytes  int64
	headerSize int
}

func (h snapshotHeader) encode() []byte {
	b := make([]byte, 0, snapshotFixed+len(h.cp.table)+4)
	b = append(b, snapshotMagic...)
	b = append(b, snapshotVersion, h.form)
	b = binary.BigEndian.AppendUint64(b, h.cp.index)
	b = binary.BigEndian.AppendUint64(b, h.cp.term)
	b = binary.BigEndian.AppendUint64(b, uint64(h.cp.start))
	b = binary.BigEndian.AppendUint64(b, uint64(h.cp.end))
	b = binary.BigEndian.AppendUint64(b, uint64(h.dataBytes))
	b = binary.BigEndian.AppendUint32(b, uint32(len(h.cp.table)))
	b = append(b, h.cp.table...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// maxSnapshotTable bounds the producer table in a snapshot header so that a
// corrupt length cannot make us allocate without limit.
const maxSnapshotTable = 1 << 30

func readSnapshotHeader(r io.Reader) (snapshotHeader, error) {
	fixed := make([]byte, snapshotFixed)
	if _, err := io.ReadFull(r, fixed); err != nil {
		return snapshotHeader{}, fmt.Errorf("%w: header: %w", ErrSnapshotCorrupt, err)
	}
	if string(fixed[:4]) != snapshotMagic || fixed[4] != snapshotVersion {
		return snapshotHeader{}, fmt.Errorf("%w: bad magic or version", ErrSnapshotCorrupt)
	}
	n := binary.BigEndian.Uint32(fixed[snapshotFixed-4:])
	if n > maxSnapshotTable {
		return snapshotHeader{}, fmt.Errorf("%w: table length %d", ErrSnapshotCorrupt, n)
	}
	rest := make([]byte, int(n)+4)
	if _, err := io.ReadFull(r, rest); err != nil {
		return snapshotHeader{}, fmt.Errorf("%w: table: %w", ErrSnapshotCorrupt, err)
	}
	crc := crc32.Update(crc32.Checksum(fixed, crcTable), crcTable, rest[:n])
	if crc != binary.BigEndian.Uint32(rest[n:]) {
		return snapshotHeader{}, fmt.Errorf("%w: header checksum", ErrSnapshotCorrupt)
	}
	h := snapshotHeader{
		form: fixed[5],
		cp: checkpoint{
			index: binary.BigEndian.Uint64(fixed[6:]),
			term:  binary.BigEndian.Uint64(fixed[14:]),
			start: int64(binary.BigEndian.Uint64(fixed[22:])),
			end:   int64(binary.BigEndian.Uint64(fixed[30:])),
			table: rest[:n],
		},
		dataBytes:  int64(binary.BigEndian.Uint64(fixed[38:])),
		headerSize: snapshotFixed + int(n) + 4,
	}
	if (h.form != formReference && h.form != formFull) || h.dataBytes < 0 || h.cp.end < h.cp.start {
		return snapshotHeader{}, fmt.Errorf("%w: form %d, %d bytes, offsets [%d, %d)",
			ErrSnapshotCorrupt, h.form, h.dataBytes, h.cp.start, h.cp.end)
	}
	return h, nil
}

// fsmSnapshot is the applied state captured by Snapshot on the FSM
// goroutine; Persist runs later beside further applies.
type fsmSnapshot struct {
	f         *FSM
	cp        checkpoint
	dataBytes int64
}

// Snapshot implements raft.FSM. It captures the applied index, the log's
// extent and the producer table; the log's bytes are referenced, not copied.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	if f.stopped {
		// Raft counts the entries the FSM refused since Stop as handled:
		// a snapshot labelled past them would let raft drop them.
		return nil, ErrClosed
	}
	return &fsmSnapshot{
		f: f,
		cp: checkpoint{
			index: f.applied.Load(), term: f.appliedTerm,
			start: f.log.StartOffset(), end: f.log.EndOffset(),
			table: f.table.AppendEncode(nil),
		},
		dataBytes: f.log.Size(),
	}, nil
}

// Persist syncs the log, writes the checkpoint, then the reference snapshot.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.f.checkpoint(s.cp); err != nil {
		sink.Cancel()
		return err
	}
	h := snapshotHeader{form: formReference, cp: s.cp, dataBytes: s.dataBytes}
	if _, err := sink.Write(h.encode()); err != nil {
		sink.Cancel()
		return fmt.Errorf("fsm: write snapshot: %w", err)
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot.
func (s *fsmSnapshot) Release() {}

// OpenSnapshot turns a stored snapshot stream into the full form that
// carries the log data, and returns its exact size. A full-form stream
// passes through unchanged. Safe to call beside applies.
func (f *FSM) OpenSnapshot(stored io.ReadCloser) (int64, io.ReadCloser, error) {
	h, err := readSnapshotHeader(stored)
	if err != nil {
		stored.Close()
		return 0, nil, err
	}
	if h.form == formFull {
		full := h.encode()
		return int64(len(full)) + h.dataBytes, &readCloser{io.MultiReader(bytes.NewReader(full), stored), stored}, nil
	}
	stored.Close()
	if start := f.log.StartOffset(); start > h.cp.end || f.log.EndOffset() < h.cp.end {
		return 0, nil, fmt.Errorf("%w: snapshot references offsets [%d, %d) but the log holds [%d, %d)",
			ErrSnapshotTrimmed, h.cp.start, h.cp.end, start, f.log.EndOffset())
	}
	// Trimming after the snapshot moved the start up: ship what the log
	// still holds, with the start it has now. The entries after the
	// snapshot repeat that trim on the receiver, as a no-op.
	h.cp.start = max(h.cp.start, f.log.StartOffset())
	if h.dataBytes, err = f.log.SizeBelow(h.cp.end); err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrSnapshotTrimmed, err)
	}
	h.form = formFull
	full := h.encode()
	data := &logReader{log: f.log, end: h.cp.end, remaining: h.dataBytes}
	pr, pw := io.Pipe()
	go func() {
		// The goroutine's owner is the returned ReadCloser: closing it
		// closes pr, which makes CopyTo's next write fail and return.
		_, err := f.log.CopyTo(pw, h.cp.end)
		pw.CloseWithError(err)
	}()
	data.r = pr
	return int64(len(full)) + h.dataBytes, &readCloser{io.MultiReader(bytes.NewReader(full), data), pr}, nil
}

// logReader bounds the piped log bytes to what the header promised, so a
// mismatch shows as an error instead of a wrong-sized snapshot.
type logReader struct {
	log       Log
	r         io.Reader
	end       int64
	remaining int64
}

func (l *logReader) Read(p []byte) (int, error) {
	if l.remaining == 0 {
		// Drain to confirm the log had no more bytes below end.
		var one [1]byte
		if n, _ := l.r.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%w: log holds more bytes below %d than the snapshot recorded", ErrSnapshotCorrupt, l.end)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.remaining {
		p = p[:l.remaining]
	}
	n, err := l.r.Read(p)
	l.remaining -= int64(n)
	if err == io.EOF && l.remaining > 0 {
		err = fmt.Errorf("%w: log ended %d bytes short of the snapshot", ErrSnapshotCorrupt, l.remaining)
	}
	return n, err
}

type readCloser struct {
	io.Reader
	c io.Closer
}

func (r *readCloser) Close() error { return r.c.Close() }

// Restore implements raft.FSM: it replaces the log and producer table with
// the snapshot's, then checkpoints.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	h, err := readSnapshotHeader(rc)
	if err != nil {
		return err
	}
	return f.restore(h, rc)
}

// RestoreIfBehind restores a snapshot as raft stored it when it holds a
// newer state than the FSM's durable one, and reports whether it did (the
// case after a crash during the install of a leader's snapshot). The
// snapshot's own header decides, not raft's label: raft labels a snapshot
// with the last entry its FSM goroutine handled, which counts entries the
// FSM never sees (a new leader's no-op, a barrier). A reference snapshot
// is this node's own, stored after a checkpoint at its index, so it is
// never ahead; one that is means that checkpoint was lost, which no stream
// of the log into itself could repair.
func (f *FSM) RestoreIfBehind(stored io.ReadCloser) (bool, error) {
	defer stored.Close()
	h, err := readSnapshotHeader(stored)
	if err != nil {
		return false, err
	}
	if h.cp.index <= f.applied.Load() {
		return false, nil
	}
	if h.form == formReference {
		return false, fmt.Errorf("%w: the node's own snapshot at index %d is ahead of its applied index %d",
			ErrCorruptState, h.cp.index, f.applied.Load())
	}
	return true, f.restore(h, stored)
}

// restore replaces the state by that of the snapshot whose header h has
// been read from r.
func (f *FSM) restore(h snapshotHeader, r io.Reader) error {
	_ = f.cleaner.wait() // the log is about to be rewritten; the snapshot's checkpoint decides
	if err := f.cleaner.forgetClean(); err != nil {
		return err
	}
	table, err := producerstate.Decode(h.cp.table)
	if err != nil {
		return fmt.Errorf("%w: producer table: %w", ErrSnapshotCorrupt, err)
	}
	// From here until the new checkpoint is written the log is neither the
	// old state nor the new one. Forget the old applied point first, so
	// that a crash in between recovers an empty state at index 0, which the
	// replica then restores again from raft's snapshot (see
	// RestoreIfBehind), instead of an old checkpoint that points past a
	// half-rewritten log.
	if err := f.forget(); err != nil {
		return err
	}
	switch h.form {
	case formReference:
		// Only a snapshot of this very log can be a reference.
		if f.log.StartOffset() > h.cp.end || f.log.EndOffset() < h.cp.end {
			return fmt.Errorf("%w: reference snapshot beyond the local log", ErrSnapshotCorrupt)
		}
		if err := f.log.TruncateTo(h.cp.end); err != nil {
			return fmt.Errorf("fsm: restore: %w", err)
		}
		h.cp.start = max(h.cp.start, f.log.StartOffset())
	case formFull:
		if err := f.restoreFull(h, r); err != nil {
			return err
		}
	}
	if !table.Timed() { // from a node that predates producer timestamps
		table = producerstate.New(table.Window())
		if err := replayHeaders(table, f.log, f.log.StartOffset(), h.cp.end); err != nil {
			return err
		}
	}
	table.SetLimit(f.limit)
	f.tableMu.Lock()
	f.table = table
	f.tableMu.Unlock()
	f.applied.Store(h.cp.index)
	f.appliedTerm = h.cp.term
	f.restored()
	if err := f.checkpoint(h.cp); err != nil {
		return err
	}
	if err := f.journal.close(); err != nil {
		return err
	}
	if f.journal, err = openJournal(f.fs, f.files, f.dir, journalRecord{index: h.cp.index, term: h.cp.term, end: h.cp.end}); err != nil {
		return fmt.Errorf("fsm: restore journal: %w", err)
	}
	f.publish()
	f.notify()
	if f.obs != nil {
		f.obs.Restored()
	}
	return nil
}

// restoreFull replaces the log by the batches of a full snapshot. They
// start with the batch holding the snapshot's log start offset, which may
// begin below it (a start inside a batch, or a segment kept whole).
func (f *FSM) restoreFull(h snapshotHeader, rc io.Reader) error {
	r := bufio.NewReaderSize(rc, 1<<20)
	first := h.cp.start
	if h.dataBytes > 0 {
		p, err := r.Peek(8)
		if err != nil {
			return fmt.Errorf("%w: first batch: %w", ErrSnapshotCorrupt, err)
		}
		if first = int64(binary.BigEndian.Uint64(p)); first > h.cp.start {
			return fmt.Errorf("%w: data starts at %d, after the log start %d", ErrSnapshotCorrupt, first, h.cp.start)
		}
	}
	if err := f.log.Reset(first); err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	if err := restoreBatches(f.log, r, h.dataBytes); err != nil {
		return err
	}
	if f.log.EndOffset() != h.cp.end {
		return fmt.Errorf("%w: restored log ends at %d, snapshot says %d", ErrSnapshotCorrupt, f.log.EndOffset(), h.cp.end)
	}
	if err := f.log.AdvanceStart(h.cp.start); err != nil {
		return fmt.Errorf("fsm: restore log start: %w", err)
	}
	return nil
}

// restoreBatches appends the n bytes of batches read from r to log.
func restoreBatches(log Log, r io.Reader, n int64) error {
	var buf []byte
	prefix := make([]byte, record.LogOverhead)
	for n > 0 {
		if n < record.MinBatchSize {
			return fmt.Errorf("%w: %d trailing bytes", ErrSnapshotCorrupt, n)
		}
		if _, err := io.ReadFull(r, prefix); err != nil {
			return fmt.Errorf("%w: batch prefix: %w", ErrSnapshotCorrupt, err)
		}
		size := int64(binary.BigEndian.Uint32(prefix[8:])) + record.LogOverhead
		if size < record.MinBatchSize || size > n {
			return fmt.Errorf("%w: batch size %d with %d bytes left", ErrSnapshotCorrupt, size, n)
		}
		if int64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		copy(buf, prefix)
		if _, err := io.ReadFull(r, buf[record.LogOverhead:]); err != nil {
			return fmt.Errorf("%w: batch body: %w", ErrSnapshotCorrupt, err)
		}
		if err := log.Append(buf); err != nil {
			return fmt.Errorf("fsm: restore batch: %w", err)
		}
		n -= size
	}
	return nil
}

// replayHeaders records in t the headers of the log's batches from the
// one holding from up to (not including) end: the producer state those
// appends built. A transaction marker's type and coordinator epoch are in
// its record, which is read from the log.
func replayHeaders(t *producerstate.Table, log Log, from, end int64) error {
	for h, err := range log.Batches(from) {
		if err != nil {
			return fmt.Errorf("fsm: rebuild producer state: %w", err)
		}
		if h.BaseOffset >= end {
			break
		}
		if !h.IsControl() {
			t.Record(h)
			continue
		}
		m, err := readMarker(log, h)
		if err != nil {
			return fmt.Errorf("fsm: rebuild producer state: marker at offset %d: %w", h.BaseOffset, err)
		}
		t.RecordMarker(producerstate.Marker{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch,
			Commit: m.Type == record.ControlCommit, CoordinatorEpoch: m.CoordinatorEpoch,
			Offset: h.BaseOffset, Timestamp: h.MaxTimestamp})
	}
	return nil
}

// readMarker reads the marker of the control batch h from the log.
func readMarker(log Log, h record.Header) (record.EndTxnMarker, error) {
	b, err := log.Read(h.BaseOffset, h.Size())
	if err != nil {
		return record.EndTxnMarker{}, err
	}
	batch, _, got, err := record.Next(b)
	if err != nil {
		return record.EndTxnMarker{}, err
	}
	if got.BaseOffset != h.BaseOffset {
		return record.EndTxnMarker{}, fmt.Errorf("%w: read the batch at %d", ErrCorruptState, got.BaseOffset)
	}
	return record.ParseEndTxnMarker(batch)
}
