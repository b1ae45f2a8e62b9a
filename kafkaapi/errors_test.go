package kafkaapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/record"
)

func TestErrorCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int16
	}{
		{nil, 0},
		{kerr.NotLeaderForPartition, 6},
		{fmt.Errorf("partition 3: %w", kerr.OutOfOrderSequenceNumber), 45},
		{errors.Join(errors.New("first"), kerr.InvalidProducerEpoch), 47},
		{context.DeadlineExceeded, kerr.RequestTimedOut.Code},
		{fmt.Errorf("apply: %w", context.DeadlineExceeded), kerr.RequestTimedOut.Code},
		{&record.CRCError{Want: 1, Got: 2}, kerr.CorruptMessage.Code},
		{record.ErrControlBatch, kerr.CorruptMessage.Code},
		{&record.RecordCountError{NumRecords: 2, Found: 1}, kerr.InvalidRecord.Code},
		{&record.CountError{NumRecords: 5, LastOffsetDelta: 0}, kerr.InvalidRecord.Code}, // LogValidator.validateBatch
		{&record.CodecError{Codec: record.CompressionGzip, Decode: true, Err: io.ErrUnexpectedEOF}, kerr.CorruptMessage.Code},
		{errors.New("mystery"), kerr.UnknownServerError.Code},
		{context.Canceled, kerr.UnknownServerError.Code},
		{&InvalidTopicNameError{Name: "a b"}, kerr.InvalidTopicException.Code},
	} {
		if got := ErrorCode(tc.err); got != tc.want {
			t.Errorf("ErrorCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestProtocolErrorsUnwrap(t *testing.T) {
	for _, err := range []error{
		&FrameSizeError{Size: -1, Max: 10},
		&UnsupportedRequestError{Key: 99},
		&DecodeError{Key: 0, Version: 9, Err: io.ErrUnexpectedEOF},
	} {
		if !errors.Is(err, ErrProtocol) {
			t.Errorf("%v does not wrap ErrProtocol", err)
		}
	}
	if !errors.Is(&DecodeError{Err: io.ErrUnexpectedEOF}, io.ErrUnexpectedEOF) {
		t.Error("DecodeError hides its cause")
	}
}

// An error message is cut to maxErrorMessage bytes, at a character
// boundary, so that quoting a client's 32 KiB name neither multiplies an
// answer nor passes what a non-flexible string length can hold.
func TestErrorMessagesAreBounded(t *testing.T) {
	long := errors.New("invalid topic name \"" + strings.Repeat("é", 20000) + "\"")
	m := errorMessage(long)
	if len(*m) > maxErrorMessage || !utf8.ValidString(*m) || !strings.HasSuffix(*m, "...") {
		t.Fatalf("message of %d bytes (valid UTF-8 %v), want at most %d ending in ...", len(*m), utf8.ValidString(*m), maxErrorMessage)
	}
	if short := errorMessage(errors.New("short")); *short != "short" {
		t.Fatalf("a short message became %q", *short)
	}
}

// A message does not repeat the code's name and description, which the
// response's code already says: only what the broker adds.
func TestErrorMessagesOmitTheCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: topic \"t\" has 2 partitions", kerr.InvalidPartitions), `topic "t" has 2 partitions`},
		{fmt.Errorf("partition 3: %w", kerr.NotLeaderForPartition), "partition 3"},
		{fmt.Errorf("%w: %w", kerr.InvalidRequest, errors.New("bad")), "bad"},
		{kerr.InvalidRequest, kerr.InvalidRequest.Description},
		{errors.New("plain"), "plain"},
	} {
		if got := *errorMessage(tc.err); got != tc.want {
			t.Errorf("errorMessage(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
