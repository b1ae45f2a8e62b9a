package record

import (
	"errors"
	"fmt"
)

// ErrInvalidBatch is wrapped by every error of this package that says the
// bytes are not a valid batch; Kafka answers them with CORRUPT_MESSAGE.
var ErrInvalidBatch = errors.New("record: invalid batch")

// ErrShortBuffer means the buffer is smaller than a batch header.
var ErrShortBuffer = fmt.Errorf("%w: buffer shorter than the %d-byte batch header", ErrInvalidBatch, HeaderSize)

// ErrControlBatch means a producer sent a control (transaction marker)
// batch, which only the broker may write.
var ErrControlBatch = fmt.Errorf("%w: control batch from a producer", ErrInvalidBatch)

// MagicError is a batch whose magic byte is not 2.
type MagicError struct{ Magic int8 }

func (e *MagicError) Error() string {
	return fmt.Sprintf("record: unsupported magic %d (want 2)", e.Magic)
}
func (e *MagicError) Unwrap() error { return ErrInvalidBatch }

// LengthError is a batch whose length field disagrees with the bytes present.
type LengthError struct {
	Length int32 // the batch length field
	Have   int   // bytes present after the length field
}

func (e *LengthError) Error() string {
	return fmt.Sprintf("record: batch length %d does not match %d bytes present", e.Length, e.Have)
}
func (e *LengthError) Unwrap() error { return ErrInvalidBatch }

// CRCError is a batch whose CRC32C does not match its bytes.
type CRCError struct{ Want, Got uint32 }

func (e *CRCError) Error() string {
	return fmt.Sprintf("record: crc mismatch: batch says %08x, bytes give %08x", e.Want, e.Got)
}
func (e *CRCError) Unwrap() error { return ErrInvalidBatch }

// CountError is a batch whose record count does not equal lastOffsetDelta+1.
type CountError struct {
	NumRecords      int32
	LastOffsetDelta int32
}

func (e *CountError) Error() string {
	return fmt.Sprintf("record: record count %d inconsistent with last offset delta %d", e.NumRecords, e.LastOffsetDelta)
}

// Unwrap gives ErrInvalidRecord (which matches ErrInvalidBatch): Kafka's
// LogValidator answers an inconsistent count with InvalidRecordException.
func (e *CountError) Unwrap() error { return ErrInvalidRecord }
