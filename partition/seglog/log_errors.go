package seglog

import (
	"errors"
	"fmt"
)

// ErrOffsetOutOfRange is wrapped by every *OffsetRangeError: the offset is
// below the log start or above the log end. Kafka answers it with
// OFFSET_OUT_OF_RANGE.
var ErrOffsetOutOfRange = errors.New("partition: offset out of range")

// ErrNotBoundary is wrapped by every *BoundaryError: an offset that must
// start a batch (TruncateTo, CopyTo) falls inside one.
var ErrNotBoundary = errors.New("partition: offset is not a batch boundary")

// ErrOffsetMismatch is wrapped by every *OffsetMismatchError: an appended
// batch does not start at the log end offset.
var ErrOffsetMismatch = errors.New("partition: batch base offset is not the log end offset")

// ErrClosed is returned by every method of a closed Log.
var ErrClosed = errors.New("partition: log closed")

// ErrCorrupt means bytes the log had accepted no longer parse as the
// batches it wrote (a damaged disk or an outside writer). Crash damage at
// the tail is repaired by Open and never surfaces as this error.
var ErrCorrupt = errors.New("partition: log data corrupt")

// ErrSyncFailed means an fsync of the log's files failed. It is sticky:
// the kernel may have dropped the unwritten data while marking it clean,
// so every later Sync, write and Close of that Log returns it, until the
// log is reopened with Open (which recovers from what the disk holds).
// Kafka answers it with KAFKA_STORAGE_ERROR.
var ErrSyncFailed = errors.New("partition: fsync failed; reopen the log")

// ErrInvalidOptions means Options holds a value Open cannot use.
var ErrInvalidOptions = errors.New("partition: invalid log options")

// OffsetRangeError is an offset outside [Start, End].
type OffsetRangeError struct {
	Offset     int64 // the offset asked for
	Start, End int64 // the log's start and end offsets at the time
}

func (e *OffsetRangeError) Error() string {
	return fmt.Sprintf("partition: offset %d out of range [%d, %d]", e.Offset, e.Start, e.End)
}

// Unwrap returns ErrOffsetOutOfRange.
func (e *OffsetRangeError) Unwrap() error { return ErrOffsetOutOfRange }

// BoundaryError is an offset that lies strictly inside the batch
// [BatchBase, BatchNext).
type BoundaryError struct {
	Offset    int64
	BatchBase int64 // base offset of the batch holding Offset
	BatchNext int64 // offset just past that batch
}

func (e *BoundaryError) Error() string {
	return fmt.Sprintf("partition: offset %d is inside batch [%d, %d)", e.Offset, e.BatchBase, e.BatchNext)
}

// Unwrap returns ErrNotBoundary.
func (e *BoundaryError) Unwrap() error { return ErrNotBoundary }

// OffsetMismatchError is an append whose batch starts at Got while the log
// ends at Want.
type OffsetMismatchError struct{ Got, Want int64 }

func (e *OffsetMismatchError) Error() string {
	return fmt.Sprintf("partition: append at offset %d, log end is %d", e.Got, e.Want)
}

// Unwrap returns ErrOffsetMismatch.
func (e *OffsetMismatchError) Unwrap() error { return ErrOffsetMismatch }

// CorruptError locates damaged bytes inside a segment file.
type CorruptError struct {
	Path string // segment file
	Pos  int64  // byte position of the bad batch
	Err  error  // what was wrong (often a record package error)
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("partition: %s at byte %d: %v", e.Path, e.Pos, e.Err)
}

// Unwrap returns both ErrCorrupt and the underlying cause, so errors.Is
// matches either.
func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }
