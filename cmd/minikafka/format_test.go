package main

import (
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/client"
)

func TestFormatRecord(t *testing.T) {
	r := &client.Record{Topic: "events", Key: []byte("same"), Value: []byte("hello"), Partition: 1, Offset: 42,
		Timestamp: time.UnixMilli(1_700_000_000_123)}
	keyless := &client.Record{Topic: "events", Value: []byte("v"), Partition: 0, Offset: 7}
	for _, tc := range []struct {
		format string
		rec    *client.Record
		want   string
	}{
		{"%v", r, "hello\n"},
		{"%p:%o %k=%v", r, "1:42 same=hello\n"},
		{"%t/%p@%o ts=%T", r, "events/1@42 ts=1700000000123\n"},
		{"100%% %v", r, "100% hello\n"},
		{`%k\t%v\n--`, r, "same\thello\n--\n"},
		{`a\\b`, r, `a\b` + "\n"},
		{"[%k]%v", keyless, "[]v\n"},
		{"", r, "\n"},
	} {
		f, err := parseFormat(tc.format)
		if err != nil {
			t.Fatalf("parseFormat(%q): %v", tc.format, err)
		}
		if got := string(f.appendRecord(nil, tc.rec)); got != tc.want {
			t.Errorf("format %q: got %q, want %q", tc.format, got, tc.want)
		}
	}
}

func TestFormatRejectsUnknownDirectives(t *testing.T) {
	for _, bad := range []string{"%x", "%v %", `\`, `\q`, "%K"} {
		if _, err := parseFormat(bad); err == nil {
			t.Errorf("parseFormat(%q) accepted", bad)
		}
	}
}
