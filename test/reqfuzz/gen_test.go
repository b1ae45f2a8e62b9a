package reqfuzz

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// allAPIs is every request kmsg knows, at versions 0 to its max: a
// stand-in for a node's ApiVersions in tests without a node.
func allAPIs() []API {
	var apis []API
	for k := int16(0); k < 100; k++ {
		if r := kmsg.RequestForKey(k); r != nil {
			apis = append(apis, API{Key: k, Max: r.MaxVersion()})
		}
	}
	return apis
}

// TestRoundFramesDeterministic checks that a seed, a round and a
// connection give the same bytes every time, and other seeds others.
// Three rounds of 25 requests: under -race a round costs about two
// seconds, most of it copying the huge requests.
func TestRoundFramesDeterministic(t *testing.T) {
	apis := allAPIs()
	for round := range 3 {
		a := roundFrames(42, round, 1, 25, apis)
		b := roundFrames(42, round, 1, 25, apis)
		c := roundFrames(43, round, 1, 25, apis)
		if len(a) != len(b) {
			t.Fatalf("round %d: %d and %d requests from one seed", round, len(a), len(b))
		}
		for i := range a {
			if !bytes.Equal(a[i].b, b[i].b) || a[i].desc != b[i].desc {
				t.Fatalf("round %d request %d differs between two runs of one seed: %s / %s", round, i, a[i].desc, b[i].desc)
			}
		}
		if len(a) == len(c) && bytes.Equal(a[0].b, c[0].b) && bytes.Equal(a[len(a)-1].b, c[len(c)-1].b) {
			t.Fatalf("round %d: seeds 42 and 43 gave the same requests", round)
		}
	}
}

// maxRequest bounds what the filler's budget lets a request grow to.
const maxRequest = 16 << 20

// TestRoundFramesCoverEveryAPI checks that 30 rounds build
// every API, versions outside the advertised range, mutated encodings
// and huge requests (none past maxRequest), and that every request's
// size prefix is right unless it was made to lie. Seed 7 has built every
// API by its 21st round; an API added later that 30 rounds miss fails
// here by name.
func TestRoundFramesCoverEveryAPI(t *testing.T) {
	apis := allAPIs()
	seen := map[int16]bool{}
	var outOfRange, mutated, lying, big int
	for round := range 30 {
		for _, fr := range roundFrames(7, round, 0, 25, apis) {
			seen[fr.key] = true
			if !fr.inRange {
				outOfRange++
			}
			if fr.mutated {
				mutated++
			}
			if len(fr.b) > 1<<20 {
				big++
			}
			if len(fr.b) > maxRequest {
				t.Fatalf("%s: %d MiB, over %d MiB", fr.desc, len(fr.b)>>20, maxRequest>>20)
			}
			size := int(int32(uint32(fr.b[0])<<24 | uint32(fr.b[1])<<16 | uint32(fr.b[2])<<8 | uint32(fr.b[3])))
			if fr.last {
				lying++
			} else if size != len(fr.b)-4 {
				t.Fatalf("%s: size prefix %d for %d bytes", fr.desc, size, len(fr.b)-4)
			}
		}
	}
	for _, a := range apis {
		if !seen[a.Key] {
			t.Errorf("no request of %s built", kmsg.NameForKey(a.Key))
		}
	}
	t.Logf("out of range %d, mutated %d, lying sizes %d, over 1 MiB %d", outOfRange, mutated, lying, big)
	if outOfRange == 0 || mutated == 0 || lying == 0 || big == 0 {
		t.Errorf("missing kinds: out of range %d, mutated %d, lying sizes %d, over 1 MiB %d", outOfRange, mutated, lying, big)
	}
}

// TestCaseFormatRoundTrips checks that a case file reads back as written.
func TestCaseFormatRoundTrips(t *testing.T) {
	c := &Case{Comments: []string{"what", "why"}, Skip: "defect X", Conns: []Conn{
		{Node: 2, Note: "Produce v9", Frames: [][]byte{{0, 0, 0, 1, 7}, {0, 0, 0, 0}}},
		{Node: 1, Frames: [][]byte{{1, 2}}},
	}}
	got, err := ParseCase(c.Format())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Format(), c.Format()) {
		t.Fatalf("round trip:\n%s\nwant\n%s", got.Format(), c.Format())
	}
}
