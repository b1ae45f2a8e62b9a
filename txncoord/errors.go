package txncoord

import (
	"errors"
	"strconv"
)

// ErrInvalidRecord is wrapped by every error for a record of the
// partition that the View cannot read.
var ErrInvalidRecord = errors.New("txncoord: invalid record")

// RecordError is a record the View cannot read; it wraps ErrInvalidRecord
// and the decoding error, if any.
type RecordError struct {
	Reason string
	Err    error
}

func (e *RecordError) Error() string {
	s := "txncoord: invalid record: " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrInvalidRecord and the cause.
func (e *RecordError) Unwrap() []error { return []error{ErrInvalidRecord, e.Err} }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
