package raftmux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The connection header, version 1. A dialer sends it once, first thing on a
// new connection:
//
//	offset 0  magic    1 byte  = headerMagic
//	offset 1  version  1 byte  = headerVersion
//	offset 2  length   uint16, big-endian: length of the channel name
//	offset 4  name     length bytes, printable ASCII
//
// and the accepting Mux answers with one status byte. After statusOK the
// connection belongs to the channel's owner on both ends; after any other
// status the Mux closes it. A future version keeps bytes 0-1 as they are,
// so that an old Mux can answer statusUnsupportedVersion.
const (
	headerMagic   byte = 0xA5
	headerVersion byte = 1
	headerFixed        = 4 // magic, version, length
)

// MaxChannelNameLen is the longest channel name, in bytes.
const MaxChannelNameLen = 255

// Status bytes of the reply to a header. The set only grows.
const (
	statusOK                 byte = 0
	statusUnknownChannel     byte = 1
	statusUnsupportedVersion byte = 2
)

// validName reports whether name may name a channel: 1 to
// MaxChannelNameLen bytes of printable ASCII without spaces.
func validName(name string) error {
	if len(name) == 0 || len(name) > MaxChannelNameLen {
		return fmt.Errorf("%w: length %d not in 1..%d", ErrInvalidChannel, len(name), MaxChannelNameLen)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("%w: byte 0x%02x at %d", ErrInvalidChannel, c, i)
		}
	}
	return nil
}

// appendHeader appends the header naming channel name to b. The caller has
// validated name.
func appendHeader(b []byte, name string) []byte {
	b = append(b, headerMagic, headerVersion)
	b = binary.BigEndian.AppendUint16(b, uint16(len(name)))
	return append(b, name...)
}

// readHeader reads exactly one header from r and returns the channel name.
// It never reads past the header, so the rest of the stream is left for the
// channel's owner. Errors wrap ErrProtocol, ErrUnsupportedVersion,
// ErrInvalidChannel, or are r's own (io.EOF, io.ErrUnexpectedEOF, timeouts).
func readHeader(r io.Reader) (string, error) {
	var fixed [headerFixed]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return "", err
	}
	if fixed[0] != headerMagic {
		return "", fmt.Errorf("%w: bad magic 0x%02x", ErrProtocol, fixed[0])
	}
	if fixed[1] != headerVersion {
		return "", fmt.Errorf("%w: %d (want %d)", ErrUnsupportedVersion, fixed[1], headerVersion)
	}
	n := int(binary.BigEndian.Uint16(fixed[2:]))
	if n == 0 || n > MaxChannelNameLen {
		return "", fmt.Errorf("%w: length %d not in 1..%d", ErrInvalidChannel, n, MaxChannelNameLen)
	}
	name := make([]byte, n)
	if _, err := io.ReadFull(r, name); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	if err := validName(string(name)); err != nil {
		return "", err
	}
	return string(name), nil
}

// statusErr turns a reply status byte into nil or an error.
func statusErr(s byte) error {
	switch s {
	case statusOK:
		return nil
	case statusUnknownChannel:
		return ErrUnknownChannel
	case statusUnsupportedVersion:
		return ErrUnsupportedVersion
	}
	return fmt.Errorf("%w: unknown status byte 0x%02x", ErrProtocol, s)
}
