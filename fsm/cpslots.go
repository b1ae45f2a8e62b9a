package fsm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/minikafka/minikafka-go/internal/vfs"
)

// The checkpoint lives in two slot files, checkpoint.0 and checkpoint.1,
// written in turn in place: a write goes to the slot not holding the
// newest checkpoint, and is durable once that file's fsync returns. A
// power loss in the middle of a write leaves that slot failing its
// checksum and the other slot whole, so recovery takes the valid slot
// with the higher index. Against a temporary file, its fsync, a rename and
// the directory's fsync, this is one fsync and no new directory entry
// (after a slot's first write). A checkpoint file of the single-file
// layout (checkpointFile) is read as a third candidate and removed after
// the first slot write.

// cpSlotFiles is the number of slot files.
const cpSlotFiles = 2

func cpSlotName(slot int) string { return checkpointFile + "." + strconv.Itoa(slot) }

// checkpointNames are the checkpoint's files: the slots in order, then the
// single file of older nodes.
var checkpointNames = []string{cpSlotName(0), cpSlotName(1), checkpointFile}

// cpSlots is where the next checkpoint goes; guarded by FSM.cpMu.
type cpSlots struct {
	next   int               // the slot the next write replaces
	exists [cpSlotFiles]bool // the slot's file has a durable directory entry
	legacy bool              // a single-file checkpoint may still be there
}

// write makes data the checkpoint in the next slot, durably, and moves
// next on. A failed write leaves next where it was: the other slot still
// holds the newest checkpoint.
func (s *cpSlots) write(fsys vfs.FS, dir string, data []byte) error {
	path := filepath.Join(dir, cpSlotName(s.next))
	fh, err := fsys.OpenFile(path, os.O_CREATE|os.O_WRONLY, vfs.FileMode)
	if err != nil {
		return err
	}
	_, err = fh.WriteAt(data, 0)
	if err == nil {
		err = fh.Truncate(int64(len(data)))
	}
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err == nil && !s.exists[s.next] {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		return err
	}
	s.exists[s.next] = true
	s.next = (s.next + 1) % cpSlotFiles
	if s.legacy {
		// Older than the slot just written: a removal that a crash undoes
		// leaves it to be passed over again.
		if err := fsys.Remove(filepath.Join(dir, checkpointFile)); err == nil || errors.Is(err, fs.ErrNotExist) {
			s.legacy = false
		}
	}
	return nil
}

// remove deletes every checkpoint file; the caller syncs the directory.
func (s *cpSlots) remove(fsys vfs.FS, dir string) error {
	for _, name := range checkpointNames {
		if err := fsys.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	*s = cpSlots{}
	return nil
}

// readCheckpoint returns the newest valid checkpoint in dir, or false if
// there is none, and the slots positioned to replace the others. A slot
// failing its checksum is a write a crash cut short, passed over; but
// when no file is valid and more than one is there, or the single-file
// checkpoint is the one that fails, the state is corrupt.
func readCheckpoint(fsys vfs.FS, dir string) (checkpoint, bool, cpSlots, error) {
	var (
		best             checkpoint
		found            bool
		slots            cpSlots
		present, invalid int
		firstErr         error
	)
	for i, name := range checkpointNames {
		b, err := vfs.ReadFile(fsys, filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return checkpoint{}, false, cpSlots{}, fmt.Errorf("fsm: read %s: %w", name, err)
		}
		present++
		if i < cpSlotFiles {
			slots.exists[i] = true
		} else {
			slots.legacy = true
		}
		cp, err := decodeCheckpoint(b)
		if err != nil {
			invalid++
			if i == cpSlotFiles {
				return checkpoint{}, false, cpSlots{}, err // never written in place
			}
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if !found || cp.index > best.index {
			best, found = cp, true
			slots.next = (i + 1) % cpSlotFiles // i == 2 gives 1; 0 is then free too
		}
	}
	if !found && present > 1 && invalid == present {
		return checkpoint{}, false, cpSlots{}, firstErr
	}
	return best, found, slots, nil
}
