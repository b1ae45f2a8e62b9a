package kafkaapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/record"
)

// ErrServerClosed is returned by Serve when it is called after Close.
var ErrServerClosed = errors.New("kafkaapi: server closed")

// ErrInvalidConfig is wrapped by every ConfigError.
var ErrInvalidConfig = errors.New("kafkaapi: invalid config")

// ConfigError is a Config field that New rejected.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("kafkaapi: invalid config: %s: %s", e.Field, e.Reason)
}
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// ErrProtocol is wrapped by every error that makes the server close a
// connection because the client broke the protocol.
var ErrProtocol = errors.New("kafkaapi: protocol violation")

// FrameSizeError is a frame whose size prefix is negative, too small to hold
// a request header, or over Config.MaxRequestBytes.
type FrameSizeError struct {
	Size int32
	Max  int32
}

func (e *FrameSizeError) Error() string {
	return fmt.Sprintf("kafkaapi: frame size %d outside [%d, %d]", e.Size, minRequestHeader, e.Max)
}
func (e *FrameSizeError) Unwrap() error { return ErrProtocol }

// UnsupportedRequestError is a request for an API key or version that the
// server does not advertise.
type UnsupportedRequestError struct {
	Key     int16
	Version int16
}

func (e *UnsupportedRequestError) Error() string {
	return fmt.Sprintf("kafkaapi: unsupported request key %d version %d", e.Key, e.Version)
}
func (e *UnsupportedRequestError) Unwrap() error { return ErrProtocol }

// DecodeError is a request whose header or body does not decode.
type DecodeError struct {
	Key     int16
	Version int16
	Err     error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("kafkaapi: cannot decode request key %d version %d: %v", e.Key, e.Version, e.Err)
}
func (e *DecodeError) Unwrap() []error { return []error{ErrProtocol, e.Err} }

// errAcksZeroFailed closes a connection after an acks=0 Produce failed on
// some partition: with no response frame, closing is the only signal Kafka
// gives the client to refresh its metadata.
var errAcksZeroFailed = errors.New("kafkaapi: acks=0 produce failed")

// InvalidTopicNameError is a topic name Kafka would not accept. It wraps
// kerr.InvalidTopicException, so ErrorCode answers INVALID_TOPIC_EXCEPTION.
type InvalidTopicNameError struct {
	Name   string
	Reason string
}

func (e *InvalidTopicNameError) Error() string {
	return fmt.Sprintf("kafkaapi: invalid topic name %q: %s", e.Name, e.Reason)
}
func (e *InvalidTopicNameError) Unwrap() error { return kerr.InvalidTopicException }

// ErrorCode maps an error to the Kafka error code to put on the wire:
// nil is 0 (NONE); a *kerr.Error anywhere in the chain gives its code; an
// expired context is REQUEST_TIMED_OUT; records that disagree with their
// batch header (record.ErrInvalidRecord) are INVALID_RECORD, as Kafka's
// InvalidRecordException; any other invalid record batch
// (record.ErrInvalidBatch) is CORRUPT_MESSAGE; anything else is
// UNKNOWN_SERVER_ERROR.
func ErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	if ke, ok := errors.AsType[*kerr.Error](err); ok && ke != nil {
		return ke.Code
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return kerr.RequestTimedOut.Code
	case errors.Is(err, record.ErrInvalidRecord):
		return kerr.InvalidRecord.Code
	case errors.Is(err, record.ErrInvalidBatch):
		return kerr.CorruptMessage.Code
	case errors.Is(err, acl.ErrInvalid):
		return kerr.InvalidRequest.Code
	}
	return kerr.UnknownServerError.Code
}

// errorMessage is the optional error text of responses that carry one,
// at most maxErrorMessage bytes (boundedMessage), without the code's own
// text (withoutCode).
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	return boundedMessage(withoutCode(err))
}

// withoutCode is err's text without that of the Kafka error it wraps
// ("NAME: description"): the response carries the code and clients print
// its name, so the message says only what the code does not. A bare code
// gives its description.
func withoutCode(err error) string {
	msg := err.Error()
	ke, ok := errors.AsType[*kerr.Error](err)
	if !ok || ke == nil {
		return msg
	}
	full := ke.Error()
	switch {
	case msg == full:
		return ke.Description
	case strings.Contains(msg, full+": "):
		return strings.Replace(msg, full+": ", "", 1)
	}
	return strings.Replace(msg, ": "+full, "", 1)
}

// maxErrorMessage bounds an error message: a message quotes what the
// client sent (a topic or user name of up to 32 KiB), and one per
// partition entry would otherwise make an answer many times its request,
// or pass the 32,767 bytes a non-flexible version can encode, which
// corrupts the whole answer.
const maxErrorMessage = 512

// boundedMessage is s cut to maxErrorMessage bytes at a character
// boundary, with "..." when cut.
func boundedMessage(s string) *string {
	if len(s) > maxErrorMessage {
		cut := maxErrorMessage - 3
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return &s
}
