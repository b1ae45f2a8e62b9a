package producerstate

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/minikafka/minikafka-go/record"
)

var update = flag.Bool("update", false, "rewrite testdata/*.txt with the actual output")

// TestScenarios runs the scripts in testdata/*.txt, in the style of
// etcd-io/raft's interaction tests. A script is a list of blocks:
//
//	# comments and blank lines before a block are kept
//	command args...
//	command args...
//	----
//	one output line per command (state may print several)
//
// A block ends at a blank line. Commands:
//
//	new [window=N]              fresh table and empty log
//	produce pid= [epoch=] [seq=] [count=] [delta=] [offset=]
//	                            Validate a batch of count records (default
//	                            1; delta= overrides lastOffsetDelta), and on
//	                            Append put it in the log (at offset=, by
//	                            default the log end) and Record it; epoch
//	                            and seq default to 0, or -1 when pid < 0
//	state                       every producer, ascending id
//	restart                     replace the table by Rebuild over the log
//	snapshot                    replace the table by Decode(AppendEncode)
//
// After every command the runner also checks that Validate changed
// nothing, that the table survives AppendEncode/Decode, and that Rebuild
// over the log gives the same table. Run with -update to rewrite the
// expected output.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenarios in testdata")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			runScript(t, file)
		})
	}
}

type block struct {
	preamble []string // comments and blank lines before the commands
	line     int      // line number of the first command
	commands []string
	expected []string
}

func parseScript(t *testing.T, text string) []block {
	t.Helper()
	var blocks []block
	var cur block
	const (
		outside = iota
		inCommands
		inOutput
	)
	state := outside
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		switch state {
		case outside:
			if l == "" || strings.HasPrefix(l, "#") {
				cur.preamble = append(cur.preamble, l)
				continue
			}
			cur.line = i + 1
			state = inCommands
			fallthrough
		case inCommands:
			switch {
			case l == "----":
				state = inOutput
			case l == "" || strings.HasPrefix(l, "#"):
				t.Fatalf("line %d: block without ---- separator", i+1)
			default:
				cur.commands = append(cur.commands, l)
			}
		case inOutput:
			if l == "" {
				blocks = append(blocks, cur)
				cur, state = block{}, outside
				continue
			}
			cur.expected = append(cur.expected, l)
		}
	}
	switch state {
	case inCommands:
		t.Fatalf("line %d: block without ---- separator", cur.line)
	case inOutput:
		blocks = append(blocks, cur)
	}
	return blocks
}

func runScript(t *testing.T, file string) {
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	blocks := parseScript(t, string(raw))
	h := &harness{t: t, table: New(DefaultWindow)}
	var out strings.Builder
	for i, b := range blocks {
		var got []string
		for _, c := range b.commands {
			got = append(got, h.run(c, file, b.line)...)
			h.checkInvariants(file, b.line, c)
		}
		if *update {
			for _, p := range b.preamble {
				out.WriteString(p + "\n")
			}
			for _, c := range b.commands {
				out.WriteString(c + "\n")
			}
			out.WriteString("----\n")
			for _, g := range got {
				out.WriteString(g + "\n")
			}
			if i < len(blocks)-1 {
				out.WriteString("\n")
			}
			continue
		}
		if !slices.Equal(got, b.expected) {
			t.Errorf("%s:%d: %s\nwant:\n%s\ngot:\n%s", file, b.line, strings.Join(b.commands, "; "),
				strings.Join(b.expected, "\n"), strings.Join(got, "\n"))
		}
	}
	if *update {
		if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// harness is a one-partition broker: a producer table and a log of the
// appended batch headers.
type harness struct {
	t     *testing.T
	table *Table
	log   []record.Header // appended batches in log order, BaseOffset set
	leo   int64           // log end offset: where the next batch goes
}

func (h *harness) run(cmd, file string, line int) []string {
	t := h.t
	t.Helper()
	fields := strings.Fields(cmd)
	args := map[string]int64{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			t.Fatalf("%s:%d: argument %q is not key=value", file, line, f)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%s:%d: argument %q: %v", file, line, f, err)
		}
		args[k] = n
	}
	arg := func(k string, def int64, required bool) int64 {
		v, ok := args[k]
		if !ok && required {
			t.Fatalf("%s:%d: %s needs %s=", file, line, fields[0], k)
		}
		if !ok {
			return def
		}
		delete(args, k)
		return v
	}
	var out []string
	switch fields[0] {
	case "new":
		h.table = New(int(arg("window", 0, false)))
		h.log, h.leo = nil, 0
		out = []string{fmt.Sprintf("window=%d", h.table.Window())}
	case "produce":
		pid := arg("pid", 0, true)
		def := int64(0)
		if pid < 0 {
			def = -1
		}
		count := int32(arg("count", 1, false))
		hdr := record.Header{
			Magic:           2,
			ProducerID:      pid,
			ProducerEpoch:   int16(arg("epoch", def, false)),
			BaseSequence:    int32(arg("seq", def, false)),
			LastOffsetDelta: int32(arg("delta", int64(count)-1, false)),
			NumRecords:      count,
		}
		offset := arg("offset", h.leo, false)
		out = []string{h.produce(hdr, offset)}
	case "state":
		for e := range h.table.All() {
			var bs []string
			for _, b := range e.Batches {
				bs = append(bs, fmt.Sprintf("%d..%d@%d+%d", b.FirstSeq, b.LastSeq, b.BaseOffset, b.Count))
			}
			out = append(out, fmt.Sprintf("pid=%d epoch=%d [%s]", e.ProducerID, e.Epoch, strings.Join(bs, " ")))
		}
		if len(out) == 0 {
			out = []string{"(empty)"}
		}
	case "restart":
		h.table = Rebuild(h.table.Window(), slices.Values(h.log))
		out = []string{fmt.Sprintf("rebuilt producers=%d leo=%d", h.table.Len(), h.leo)}
	case "snapshot":
		enc := h.table.AppendEncode(nil)
		dec, err := Decode(enc)
		if err != nil {
			t.Fatalf("%s:%d: decode: %v", file, line, err)
		}
		h.table = dec
		out = []string{fmt.Sprintf("restored producers=%d bytes=%d", h.table.Len(), len(enc))}
	default:
		t.Fatalf("%s:%d: unknown command %q", file, line, fields[0])
	}
	if len(args) > 0 {
		t.Fatalf("%s:%d: unknown arguments %v", file, line, args)
	}
	return out
}

// produce is what the partition FSM does with one batch.
func (h *harness) produce(hdr record.Header, offset int64) string {
	before := h.table.Clone()
	res := h.table.Validate(hdr)
	if again := h.table.Validate(hdr); again != res {
		h.t.Errorf("Validate is not repeatable: %+v then %+v", res, again)
	}
	if !h.table.Equal(before) {
		h.t.Errorf("Validate changed the table")
	}
	switch res.Verdict {
	case Append:
		hdr.BaseOffset = offset
		h.table.Record(hdr)
		h.log = append(h.log, hdr)
		h.leo = hdr.NextOffset()
		return fmt.Sprintf("Append offset=%d leo=%d", offset, h.leo)
	case Duplicate:
		o := res.Original
		return fmt.Sprintf("Duplicate offset=%d (%d..%d+%d) leo=%d", o.BaseOffset, o.FirstSeq, o.LastSeq, o.Count, h.leo)
	case Fenced:
		return fmt.Sprintf("Fenced epoch=%d leo=%d", res.Epoch, h.leo)
	case OutOfOrder:
		return fmt.Sprintf("OutOfOrder expected=%d leo=%d", res.Expected, h.leo)
	}
	h.t.Fatalf("unknown verdict %v", res.Verdict)
	return ""
}

func (h *harness) checkInvariants(file string, line int, cmd string) {
	t := h.t
	t.Helper()
	enc := h.table.AppendEncode(nil)
	dec, err := Decode(enc)
	if err != nil {
		t.Fatalf("%s:%d: after %q: decode: %v", file, line, cmd, err)
	}
	if !dec.Equal(h.table) {
		t.Errorf("%s:%d: after %q: Decode(AppendEncode(t)) differs from t", file, line, cmd)
	}
	if re := Rebuild(h.table.Window(), slices.Values(h.log)); !re.Equal(h.table) {
		t.Errorf("%s:%d: after %q: Rebuild over the log differs from the table", file, line, cmd)
	}
}
