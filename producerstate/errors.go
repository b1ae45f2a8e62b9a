package producerstate

import (
	"errors"
	"fmt"
)

// ErrCorrupt is wrapped by every error Decode returns: the bytes are not a
// table this package encoded (truncated, garbled, or of an unknown format
// version). A snapshot that fails with it cannot be restored.
var ErrCorrupt = errors.New("producerstate: corrupt encoding")

// CorruptError says where and why Decode gave up.
type CorruptError struct {
	Offset int    // byte offset in the input where the problem was found
	Reason string // for people; do not match on it
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("producerstate: corrupt encoding at byte %d: %s", e.Offset, e.Reason)
}

// Unwrap returns ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// VersionError is an encoding whose format version this binary does not
// know, most likely written by a newer one.
type VersionError struct{ Version uint8 }

func (e *VersionError) Error() string {
	return fmt.Sprintf("producerstate: unknown encoding version %d (this binary reads %d)", e.Version, formatVersion)
}

// Unwrap returns ErrCorrupt.
func (e *VersionError) Unwrap() error { return ErrCorrupt }
