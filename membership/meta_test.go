package membership

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

func TestMetaRoundTrip(t *testing.T) {
	for _, w := range []wireMeta{
		{NodeMeta: testMeta(1)},
		{NodeMeta: testMeta(2147483647), leaving: true},
		{NodeMeta: NodeMeta{ID: 3, KafkaAddr: "a:1", RaftAddr: "b:2", DiskFull: true}, leaving: true},
		{NodeMeta: NodeMeta{ID: 4, KafkaAddr: "a:1", RaftAddr: "b:2", CleansDirtyPart: true}},
		{NodeMeta: NodeMeta{ID: 7, KafkaAddr: "[::1]:9092", RaftAddr: "node7:65535"}},
	} {
		b, err := encodeMeta(w)
		if err != nil {
			t.Fatalf("encode %+v: %v", w, err)
		}
		got, err := decodeMeta(b)
		if err != nil {
			t.Fatalf("decode %x: %v", b, err)
		}
		if got != w {
			t.Errorf("round trip: got %+v, want %+v", got, w)
		}
	}
}

func TestMetaEncodingLayout(t *testing.T) {
	b, err := encodeMeta(wireMeta{NodeMeta: NodeMeta{ID: 258, KafkaAddr: "a:1", RaftAddr: "b:2"}, leaving: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{1, 1, 0, 0, 1, 2, 3, 'a', ':', '1', 3, 'b', ':', '2'}
	if string(b) != string(want) {
		t.Errorf("encoding: got %v, want %v", b, want)
	}
	// A full disk is flag bit 1, in the same version-1 encoding.
	b, err = encodeMeta(wireMeta{NodeMeta: NodeMeta{ID: 258, KafkaAddr: "a:1", RaftAddr: "b:2", DiskFull: true}})
	if err != nil {
		t.Fatal(err)
	}
	want = []byte{1, 2, 0, 0, 1, 2, 3, 'a', ':', '1', 3, 'b', ':', '2'}
	if string(b) != string(want) {
		t.Errorf("encoding with a full disk: got %v, want %v", b, want)
	}
	// A build that cleans a dirty part is flag bit 2; an older reader
	// ignores it.
	b, err = encodeMeta(wireMeta{NodeMeta: NodeMeta{ID: 258, KafkaAddr: "a:1", RaftAddr: "b:2", CleansDirtyPart: true}})
	if err != nil {
		t.Fatal(err)
	}
	want = []byte{1, 4, 0, 0, 1, 2, 3, 'a', ':', '1', 3, 'b', ':', '2'}
	if string(b) != string(want) {
		t.Errorf("encoding of a build that cleans a dirty part: got %v, want %v", b, want)
	}
}

func TestMetaValidate(t *testing.T) {
	good := testMeta(3)
	if err := good.Validate(); err != nil {
		t.Fatalf("valid meta rejected: %v", err)
	}
	for name, m := range map[string]NodeMeta{
		"zero id":         {ID: 0, KafkaAddr: good.KafkaAddr, RaftAddr: good.RaftAddr},
		"negative id":     {ID: -1, KafkaAddr: good.KafkaAddr, RaftAddr: good.RaftAddr},
		"no kafka addr":   {ID: 3, RaftAddr: good.RaftAddr},
		"no port":         {ID: 3, KafkaAddr: "host", RaftAddr: good.RaftAddr},
		"port zero":       {ID: 3, KafkaAddr: good.KafkaAddr, RaftAddr: "h:0"},
		"port too big":    {ID: 3, KafkaAddr: good.KafkaAddr, RaftAddr: "h:65536"},
		"empty host":      {ID: 3, KafkaAddr: ":9092", RaftAddr: good.RaftAddr},
		"named port":      {ID: 3, KafkaAddr: "h:kafka", RaftAddr: good.RaftAddr},
		"empty raft addr": {ID: 3, KafkaAddr: good.KafkaAddr},
	} {
		if err := m.Validate(); !errors.Is(err, ErrInvalidMeta) {
			t.Errorf("%s: Validate(%+v) = %v, want ErrInvalidMeta", name, m, err)
		}
	}
}

func TestMetaSizeLimit(t *testing.T) {
	// 6 fixed bytes, 2 one-byte lengths and 2-byte length prefixes over 127.
	fits := func(n int) NodeMeta {
		return NodeMeta{ID: 1, KafkaAddr: strings.Repeat("k", n) + ":9092", RaftAddr: "r:1"}
	}
	// Find the largest host that fits, by encoding: sizes are exact.
	n := 0
	for ; ; n++ {
		b, err := encodeMeta(wireMeta{NodeMeta: fits(n + 1)})
		if err != nil {
			break
		}
		if len(b) > MetaMaxSize {
			t.Fatalf("encoded %d bytes without error", len(b))
		}
	}
	b, err := encodeMeta(wireMeta{NodeMeta: fits(n)})
	if err != nil || len(b) != MetaMaxSize {
		t.Fatalf("largest meta: %d bytes, err %v; want exactly %d", len(b), err, MetaMaxSize)
	}
	err = fits(n + 1).Validate()
	var se *MetaSizeError
	if !errors.Is(err, ErrMetaTooLarge) || !errors.As(err, &se) {
		t.Fatalf("one byte over: err %v, want *MetaSizeError", err)
	}
	if se.Size != MetaMaxSize+1 || se.Limit != MetaMaxSize {
		t.Errorf("MetaSizeError = %+v, want size %d limit %d", se, MetaMaxSize+1, MetaMaxSize)
	}
}

func TestDecodeMetaRejects(t *testing.T) {
	valid, err := encodeMeta(wireMeta{NodeMeta: testMeta(4)})
	if err != nil {
		t.Fatal(err)
	}
	withVersion := func(v byte, b []byte) []byte {
		c := append([]byte(nil), b...)
		c[0] = v
		return c
	}
	for name, b := range map[string][]byte{
		"empty":          nil,
		"short header":   valid[:5],
		"version 0":      withVersion(0, valid),
		"truncated addr": valid[:len(valid)-1],
		"no raft addr":   valid[:6+1+len(testMeta(4).KafkaAddr)],
		"v1 trailing":    append(append([]byte(nil), valid...), 0),
		"huge length":    append(append([]byte(nil), valid[:6]...), binary.AppendUvarint(nil, 1<<40)...),
		"bad varint":     append(append([]byte(nil), valid[:6]...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
		"zero id":        func() []byte { c := append([]byte(nil), valid...); copy(c[2:6], []byte{0, 0, 0, 0}); return c }(),
		"over limit":     append(withVersion(2, valid), make([]byte, MetaMaxSize)...),
	} {
		if _, err := decodeMeta(b); !errors.Is(err, ErrInvalidMeta) {
			t.Errorf("%s: decodeMeta(%x) err = %v, want ErrInvalidMeta", name, b, err)
		}
	}
}

// A later version appends fields; this version reads what it knows.
func TestDecodeMetaNewerVersion(t *testing.T) {
	b, err := encodeMeta(wireMeta{NodeMeta: testMeta(5), leaving: true})
	if err != nil {
		t.Fatal(err)
	}
	b[0] = 3
	b[1] |= 0x80     // a flag this version does not know
	b = append(b, 0) // version 2: no listeners
	b = append(b, "rack=a"...)
	got, err := decodeMeta(b)
	if err != nil {
		t.Fatalf("decode newer version: %v", err)
	}
	if got.NodeMeta != testMeta(5) || !got.leaving {
		t.Errorf("got %+v, want %+v leaving", got, testMeta(5))
	}
}

// Version 2 carries the listeners.
func TestMetaListeners(t *testing.T) {
	m := testMeta(3)
	m.Listeners = "PLAINTEXT://h:1,SASL_SSL://h:2"
	b, err := encodeMeta(wireMeta{NodeMeta: m})
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != 2 {
		t.Fatalf("version %d, want 2", b[0])
	}
	if got, err := decodeMeta(b); err != nil || got.NodeMeta != m {
		t.Fatalf("decode: %+v, %v", got, err)
	}
}

func FuzzDecodeMeta(f *testing.F) {
	for _, w := range []wireMeta{{NodeMeta: testMeta(1)}, {NodeMeta: testMeta(9), leaving: true}} {
		b, _ := encodeMeta(w)
		f.Add(b)
	}
	f.Add([]byte{2, 0, 0, 0, 0, 1, 3, 'a', ':', '1', 3, 'b', ':', '2', 9, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := decodeMeta(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidMeta) {
				t.Fatalf("error %v does not wrap ErrInvalidMeta", err)
			}
			return
		}
		again, err := encodeMeta(w)
		if err != nil {
			t.Fatalf("decoded %+v does not re-encode: %v", w, err)
		}
		back, err := decodeMeta(again)
		if err != nil || back != w {
			t.Fatalf("re-decode: %+v, %v; want %+v", back, err, w)
		}
	})
}

func TestNames(t *testing.T) {
	if got := NodeName(12); got != "node-12" {
		t.Errorf("NodeName(12) = %q", got)
	}
	for name, want := range map[string]int32{"node-3": 3, "node-03": 0, "nod-3": 0, "node-": 0, "node-0": 0} {
		got, ok := parseNodeName(name)
		if got != want || ok != (want != 0) {
			t.Errorf("parseNodeName(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
}
