package raftmux

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestHeaderRoundTripLeavesTheRestUnread(t *testing.T) {
	for _, name := range []string{"a", "raft/p-events-0", "rpc/meta"} {
		b := appendHeader(nil, name)
		if len(b) != headerFixed+len(name) || b[0] != headerMagic || b[1] != headerVersion {
			t.Fatalf("header for %q = %v", name, b)
		}
		r := bytes.NewReader(append(b, "rest"...))
		got, err := readHeader(r)
		if err != nil || got != name {
			t.Fatalf("readHeader = %q, %v; want %q", got, err, name)
		}
		if rest, _ := io.ReadAll(r); string(rest) != "rest" {
			t.Errorf("after the header %q is left, want %q", rest, "rest")
		}
	}
}

func TestReadHeaderErrors(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, io.EOF},
		{"short fixed part", []byte{headerMagic, headerVersion, 0}, io.ErrUnexpectedEOF},
		{"bad magic", []byte{'G', 'E', 'T', ' '}, ErrProtocol},
		{"version 0", []byte{headerMagic, 0, 0, 1, 'a'}, ErrUnsupportedVersion},
		{"version 2", []byte{headerMagic, 2, 0, 1, 'a'}, ErrUnsupportedVersion},
		{"zero length", []byte{headerMagic, headerVersion, 0, 0}, ErrInvalidChannel},
		{"length 256", []byte{headerMagic, headerVersion, 1, 0}, ErrInvalidChannel},
		{"short name", []byte{headerMagic, headerVersion, 0, 2, 'a'}, io.ErrUnexpectedEOF},
		{"missing name", []byte{headerMagic, headerVersion, 0, 2}, io.ErrUnexpectedEOF},
		{"control byte", []byte{headerMagic, headerVersion, 0, 2, 'a', 0}, ErrInvalidChannel},
	}
	for _, tc := range cases {
		if _, err := readHeader(bytes.NewReader(tc.in)); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestStatusErr(t *testing.T) {
	for s, want := range map[byte]error{
		statusOK:                 nil,
		statusUnknownChannel:     ErrUnknownChannel,
		statusUnsupportedVersion: ErrUnsupportedVersion,
		3:                        ErrProtocol,
		0xff:                     ErrProtocol,
	} {
		if err := statusErr(s); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("statusErr(%d) = %v, want %v", s, err, want)
		}
	}
}

// FuzzReadHeader: any input either fails or yields a valid name whose
// encoding is exactly the bytes consumed.
func FuzzReadHeader(f *testing.F) {
	f.Add(appendHeader(nil, "raft/g1"))
	f.Add([]byte{headerMagic, 2, 0, 1, 'a'})
	f.Add([]byte("GET / HTTP/1.1"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		name, err := readHeader(r)
		if err != nil {
			return
		}
		if err := validName(name); err != nil {
			t.Fatalf("readHeader accepted invalid name %q: %v", name, err)
		}
		consumed := len(in) - r.Len()
		if enc := appendHeader(nil, name); !bytes.Equal(enc, in[:consumed]) {
			t.Fatalf("consumed %v, but %q encodes as %v", in[:consumed], name, enc)
		}
	})
}
