package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/producerstate"
)

// Durability of the applied state.
//
// The partition log is not fsynced per apply: acknowledged data is durable
// in the Raft log until raft compacts it, and raft compacts only after a
// snapshot, whose Persist first syncs the log and writes a checkpoint. So
// the FSM's durable state is:
//
//   - checkpoint: applied index and term, log start and end, producer table;
//     written durably to one of two slot files (cpslots.go) after syncing
//     the log, at every snapshot, after a restore, on Close, at every trim
//     before its segments are deleted (so the start it set is never lost),
//     and at every producer expiry that removed producers (the batch
//     headers that recovery replays into the table cannot replay it).
//   - journal: one small record (applied index, term, log end) appended after
//     every ApplyBatch, without fsync. After a crash of the process the page
//     cache still holds it and the log, so a restart resumes exactly where
//     the FSM stopped; after a power loss it may be short or ahead of the
//     log, and recovery takes the newest record that the log still covers.
//
// Recovery cuts the log back to the chosen point and rebuilds the producer
// table (with the open transactions and the aborted transactions index)
// from the checkpoint's table plus the stored batch headers after the
// checkpoint, reading the record of each transaction marker among them.
// Entries after the chosen point are replayed by raft.

const (
	checkpointFile = "checkpoint"
	journalFile    = "applied.journal"

	checkpointMagic   = "MKCP"
	checkpointVersion = 1

	journalRecordSize = 8 + 8 + 8 + 4
	// journalRotateBytes bounds the journal: past it, the next append starts
	// the file over with the latest record.
	journalRotateBytes = 1 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptState means the FSM's checkpoint or the log disagree in a way
// recovery cannot repair, such as a log shorter than its checkpoint.
var ErrCorruptState = errors.New("fsm: corrupt durable state")

// errRestoring is a checkpoint refused while a Restore that failed part
// way has left the log neither the old state nor the new one.
var errRestoring = errors.New("fsm: a restore is unfinished; no checkpoint until one completes")

// checkpoint is the applied state at one Raft index.
type checkpoint struct {
	index, term uint64
	start, end  int64  // log start and end offsets
	table       []byte // producerstate encoding
}

func (c checkpoint) encode() []byte {
	b := make([]byte, 0, 45+len(c.table))
	b = append(b, checkpointMagic...)
	b = append(b, checkpointVersion)
	b = binary.BigEndian.AppendUint64(b, c.index)
	b = binary.BigEndian.AppendUint64(b, c.term)
	b = binary.BigEndian.AppendUint64(b, uint64(c.start))
	b = binary.BigEndian.AppendUint64(b, uint64(c.end))
	b = binary.BigEndian.AppendUint32(b, uint32(len(c.table)))
	b = append(b, c.table...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

func decodeCheckpoint(b []byte) (checkpoint, error) {
	const fixed = 4 + 1 + 8*4 + 4
	if len(b) < fixed+4 || string(b[:4]) != checkpointMagic {
		return checkpoint{}, fmt.Errorf("%w: checkpoint header", ErrCorruptState)
	}
	if b[4] != checkpointVersion {
		return checkpoint{}, fmt.Errorf("%w: checkpoint version %d", ErrCorruptState, b[4])
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return checkpoint{}, fmt.Errorf("%w: checkpoint checksum", ErrCorruptState)
	}
	c := checkpoint{
		index: binary.BigEndian.Uint64(b[5:]),
		term:  binary.BigEndian.Uint64(b[13:]),
		start: int64(binary.BigEndian.Uint64(b[21:])),
		end:   int64(binary.BigEndian.Uint64(b[29:])),
	}
	n := int(binary.BigEndian.Uint32(b[37:]))
	if n != len(body)-fixed {
		return checkpoint{}, fmt.Errorf("%w: checkpoint table length", ErrCorruptState)
	}
	c.table = body[fixed:]
	return c, nil
}

// checkpoint makes c durable: it syncs the log, then replaces the
// checkpoint file atomically. It never replaces a newer checkpoint with an
// older one (a Persist may finish after a Restore wrote a newer one).
func (f *FSM) checkpoint(c checkpoint) error {
	if f.cleaner != nil {
		if err := f.cleaner.wait(); err != nil { // no checkpoint past a cleaning not yet done
			return err
		}
	}
	f.cpMu.Lock()
	defer f.cpMu.Unlock()
	if f.restoring {
		// The log is half rewritten: no snapshot may claim it, so a
		// Persist must fail rather than store one without a checkpoint.
		return errRestoring
	}
	if c.index < f.cpIndex {
		return nil // an older state (a Persist finishing after a Restore)
	}
	if err := f.log.Sync(); err != nil {
		return fmt.Errorf("fsm: sync log: %w", err)
	}
	if err := f.cpSlots.write(f.fs, f.dir, c.encode()); err != nil {
		return fmt.Errorf("fsm: write checkpoint: %w", err)
	}
	f.cpIndex, f.cpEnd = c.index, c.end
	return nil
}

// journalRecord is one applied point.
type journalRecord struct {
	index, term uint64
	end         int64
}

// journal appends applied points to a file without fsync. Only the FSM
// goroutine uses it. Its file goes through the node's file cache, which
// may close it between appends without fsyncing it: the journal need only
// outlive the process.
type journal struct {
	fh   *vfs.Handle
	size int64
	buf  [journalRecordSize]byte
}

// adoptJournal hands a journal file just created to files.
func adoptJournal(fsys vfs.FS, files *vfs.FileCache, fh vfs.File) *journal {
	return &journal{fh: files.Adopt(fsys, fh, vfs.HandleOptions{Flag: os.O_WRONLY, Volatile: true})}
}

func openJournal(fsys vfs.FS, files *vfs.FileCache, dir string, start journalRecord) (*journal, error) {
	fh, err := fsys.OpenFile(filepath.Join(dir, journalFile), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, vfs.FileMode)
	if err != nil {
		return nil, err
	}
	j := adoptJournal(fsys, files, fh)
	if err := j.append(start.index, start.term, start.end); err != nil {
		j.fh.Close()
		return nil, err
	}
	return j, nil
}

func (j *journal) append(index, term uint64, end int64) error {
	if j.size >= journalRotateBytes {
		if err := j.fh.Truncate(0); err != nil {
			return err
		}
		j.size = 0
	}
	b := j.buf[:0]
	b = binary.BigEndian.AppendUint64(b, index)
	b = binary.BigEndian.AppendUint64(b, term)
	b = binary.BigEndian.AppendUint64(b, uint64(end))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
	if _, err := j.fh.WriteAt(b, j.size); err != nil {
		// Undo a partial record, so that later ones stay readable.
		return errors.Join(err, j.fh.Truncate(j.size))
	}
	j.size += int64(len(b))
	return nil
}

func (j *journal) close() error {
	if j == nil || j.fh == nil {
		return nil
	}
	err := j.fh.Close()
	j.fh = nil
	return err
}

// readJournal returns the whole, intact records of the journal in order,
// stopping at the first torn or corrupt one.
func readJournal(fsys vfs.FS, dir string) ([]journalRecord, error) {
	b, err := vfs.ReadFile(fsys, filepath.Join(dir, journalFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []journalRecord
	for len(b) >= journalRecordSize {
		r := b[:journalRecordSize]
		if crc32.Checksum(r[:24], crcTable) != binary.BigEndian.Uint32(r[24:]) {
			break
		}
		out = append(out, journalRecord{
			index: binary.BigEndian.Uint64(r),
			term:  binary.BigEndian.Uint64(r[8:]),
			end:   int64(binary.BigEndian.Uint64(r[16:])),
		})
		b = b[journalRecordSize:]
	}
	return out, nil
}

// recover loads the newest consistent applied state (see the comment at the
// top of this file).
func (f *FSM) recover(window int) error {
	cp, hasCheckpoint, slots, err := readCheckpoint(f.fs, f.dir)
	if err != nil {
		return err
	}
	f.cpSlots = slots
	if !hasCheckpoint {
		cp = checkpoint{start: f.log.StartOffset(), end: f.log.StartOffset()}
	}
	logEnd := f.log.EndOffset()
	if logEnd < cp.end || f.log.StartOffset() > cp.end {
		return fmt.Errorf("%w: log holds [%d, %d) but the checkpoint at index %d ends at %d",
			ErrCorruptState, f.log.StartOffset(), logEnd, cp.index, cp.end)
	}
	table := producerstate.New(window)
	if hasCheckpoint {
		t, err := producerstate.Decode(cp.table)
		if err != nil {
			return fmt.Errorf("%w: checkpoint producer table: %w", ErrCorruptState, err)
		}
		table = t
	}
	f.cpIndex, f.cpEnd = cp.index, cp.end
	// A trim records its start in a checkpoint before deleting segments;
	// finish a deletion that a crash cut short.
	if cp.start > f.log.StartOffset() {
		if err := f.log.AdvanceStart(cp.start); err != nil {
			return fmt.Errorf("fsm: restore log start %d: %w", cp.start, err)
		}
	}
	replayFrom := cp.end
	if !table.Timed() {
		// A checkpoint from before producer timestamps: rebuild the whole
		// table from the log, which no trim has touched yet.
		table, replayFrom = producerstate.New(table.Window()), f.log.StartOffset()
	}

	target := journalRecord{index: cp.index, term: cp.term, end: cp.end}
	records, err := readJournal(f.fs, f.dir)
	if err != nil {
		return fmt.Errorf("fsm: read journal: %w", err)
	}
	for _, r := range records {
		if r.index > target.index && r.end >= target.end && r.end <= logEnd {
			target = r
		}
	}
	if logEnd > target.end {
		f.logger.Warn("cutting partition log back to the last applied point; raft replays the rest",
			"from", logEnd, "to", target.end, "index", target.index)
		if err := f.log.TruncateTo(target.end); err != nil {
			return fmt.Errorf("fsm: truncate log to %d: %w", target.end, err)
		}
	}
	if err := replayHeaders(table, f.log, replayFrom, target.end); err != nil {
		return err
	}
	f.table = table
	f.applied.Store(target.index)
	f.appliedTerm = target.term
	j, err := openJournal(f.fs, f.files, f.dir, target)
	if err != nil {
		return fmt.Errorf("fsm: open journal: %w", err)
	}
	f.journal = j
	return nil
}

// forget removes the checkpoint and empties the journal, durably, so that
// nothing claims an applied point until the next checkpoint. The FSM
// goroutine calls it (from Restore).
func (f *FSM) forget() error {
	f.cpMu.Lock()
	defer f.cpMu.Unlock()
	if err := f.cpSlots.remove(f.fs, f.dir); err != nil {
		return fmt.Errorf("fsm: forget checkpoint: %w", err)
	}
	if err := f.journal.close(); err != nil {
		return fmt.Errorf("fsm: forget journal: %w", err)
	}
	fh, err := f.fs.OpenFile(filepath.Join(f.dir, journalFile), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, vfs.FileMode)
	if err != nil {
		return fmt.Errorf("fsm: forget journal: %w", err)
	}
	f.journal = adoptJournal(f.fs, f.files, fh)
	if err := f.fs.SyncDir(f.dir); err != nil {
		return fmt.Errorf("fsm: forget: %w", err)
	}
	f.restoring = true
	return nil
}

// restored ends what forget began: the next checkpoint is written whatever
// its index.
func (f *FSM) restored() {
	f.cpMu.Lock()
	f.restoring, f.cpIndex, f.cpEnd = false, 0, 0
	f.cpMu.Unlock()
}
