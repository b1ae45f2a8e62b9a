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
//	                            (txn=1: a transactional batch)
//	marker pid= [epoch=] [coord=] commit=0|1
//	                            ValidateMarker a COMMIT (1) or ABORT (0)
//	                            marker, and on Append write it at the log
//	                            end and RecordMarker it
//	state                       every producer, ascending id (txn@offset:
//	                            its open transaction; coord: last marker's)
//	txns                        first unstable offset, open transactions,
//	                            aborted index (pid@first..marker)
//	restart                     replace the table by a replay of the log
//	snapshot                    replace the table by Decode(AppendEncode)
//
// After every command the runner also checks that Validate changed
// nothing, that the table survives AppendEncode/Decode, and that
// replaying the log (Rebuild when it holds no marker) gives the same
// table. Run with -update to rewrite the
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
// appended batch headers and markers.
type harness struct {
	t     *testing.T
	table *Table
	log   []logEntry // in log order, BaseOffset set
	leo   int64      // log end offset: where the next batch goes
}

// logEntry is an appended batch, with its marker if it is one.
type logEntry struct {
	hdr    record.Header
	marker *Marker
}

// args are a command's key=value arguments; each is read once.
type args struct {
	t    *testing.T
	cmd  string
	at   string // file:line
	vals map[string]int64
}

func (a *args) get(k string, def int64, required bool) int64 {
	v, ok := a.vals[k]
	if !ok && required {
		a.t.Fatalf("%s: %s needs %s=", a.at, a.cmd, k)
	}
	if !ok {
		return def
	}
	delete(a.vals, k)
	return v
}

func parseArgs(t *testing.T, fields []string, at string) *args {
	a := &args{t: t, cmd: fields[0], at: at, vals: map[string]int64{}}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			t.Fatalf("%s: argument %q is not key=value", at, f)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%s: argument %q: %v", at, f, err)
		}
		a.vals[k] = n
	}
	return a
}

func (h *harness) run(cmd, file string, line int) []string {
	t := h.t
	t.Helper()
	fields := strings.Fields(cmd)
	at := fmt.Sprintf("%s:%d", file, line)
	a := parseArgs(t, fields, at)
	var out []string
	switch fields[0] {
	case "new":
		h.table = New(int(a.get("window", 0, false)))
		h.log, h.leo = nil, 0
		out = []string{fmt.Sprintf("window=%d", h.table.Window())}
	case "produce":
		out = []string{h.produceCmd(a)}
	case "marker":
		out = []string{h.marker(a)}
	case "state":
		out = h.state()
	case "txns":
		out = h.txns()
	case "restart":
		h.table = h.rebuild()
		out = []string{fmt.Sprintf("rebuilt producers=%d leo=%d", h.table.Len(), h.leo)}
	case "snapshot":
		enc := h.table.AppendEncode(nil)
		dec, err := Decode(enc)
		if err != nil {
			t.Fatalf("%s: decode: %v", at, err)
		}
		h.table = dec
		out = []string{fmt.Sprintf("restored producers=%d bytes=%d", h.table.Len(), len(enc))}
	default:
		t.Fatalf("%s: unknown command %q", at, fields[0])
	}
	if len(a.vals) > 0 {
		t.Fatalf("%s: unknown arguments %v", at, a.vals)
	}
	return out
}

// produceCmd reads a produce command's arguments and produces the batch.
func (h *harness) produceCmd(a *args) string {
	pid := a.get("pid", 0, true)
	def := int64(0)
	if pid < 0 {
		def = -1
	}
	count := int32(a.get("count", 1, false))
	hdr := record.Header{
		Magic:           2,
		ProducerID:      pid,
		ProducerEpoch:   int16(a.get("epoch", def, false)),
		BaseSequence:    int32(a.get("seq", def, false)),
		LastOffsetDelta: int32(a.get("delta", int64(count)-1, false)),
		NumRecords:      count,
	}
	if a.get("txn", 0, false) != 0 {
		hdr.Attributes = record.AttrTransactional
	}
	return h.produce(hdr, a.get("offset", h.leo, false))
}

// marker is what the partition FSM does with a transaction marker.
func (h *harness) marker(a *args) string {
	m := Marker{ProducerID: a.get("pid", 0, true), Epoch: int16(a.get("epoch", 0, false)),
		Commit: a.get("commit", 0, true) != 0, CoordinatorEpoch: int32(a.get("coord", 0, false)),
		Offset: h.leo, Timestamp: h.leo}
	before := h.table.Clone()
	res := h.table.ValidateMarker(m.ProducerID, m.Epoch, m.CoordinatorEpoch)
	if !h.table.Equal(before) {
		h.t.Errorf("ValidateMarker changed the table")
	}
	switch res.Verdict {
	case Append:
	case Fenced:
		return fmt.Sprintf("Fenced epoch=%d leo=%d", res.Epoch, h.leo)
	case CoordinatorFenced:
		return fmt.Sprintf("CoordinatorFenced coord=%d leo=%d", res.CoordinatorEpoch, h.leo)
	default:
		h.t.Fatalf("unexpected marker verdict %v", res.Verdict)
	}
	ended := h.table.RecordMarker(m)
	hdr := record.Header{Magic: 2, ProducerID: m.ProducerID, ProducerEpoch: m.Epoch, BaseSequence: -1,
		Attributes: record.AttrTransactional | record.AttrControl, NumRecords: 1, BaseOffset: h.leo, MaxTimestamp: h.leo}
	h.log = append(h.log, logEntry{hdr: hdr, marker: &m})
	h.leo++
	return fmt.Sprintf("Marker offset=%d ended=%v leo=%d", m.Offset, ended, h.leo)
}

// state prints every producer, ascending id.
func (h *harness) state() []string {
	var out []string
	for e := range h.table.All() {
		var bs []string
		for _, b := range e.Batches {
			bs = append(bs, fmt.Sprintf("%d..%d@%d+%d", b.FirstSeq, b.LastSeq, b.BaseOffset, b.Count))
		}
		line := fmt.Sprintf("pid=%d epoch=%d [%s]", e.ProducerID, e.Epoch, strings.Join(bs, " "))
		if e.TxnFirstOffset >= 0 {
			line += fmt.Sprintf(" txn@%d", e.TxnFirstOffset)
		}
		if e.CoordinatorEpoch >= 0 {
			line += fmt.Sprintf(" coord=%d", e.CoordinatorEpoch)
		}
		out = append(out, line)
	}
	if len(out) == 0 {
		out = []string{"(empty)"}
	}
	return out
}

// txns prints the first unstable offset, the open transactions and the
// aborted index.
func (h *harness) txns() []string {
	unstable := "none"
	if off, ok := h.table.FirstUnstableOffset(); ok {
		unstable = strconv.FormatInt(off, 10)
	}
	var open, aborted []string
	for _, o := range h.table.Ongoing() {
		open = append(open, fmt.Sprintf("%d@%d", o.ProducerID, o.FirstOffset))
	}
	for _, a := range h.table.AbortedTxns() {
		aborted = append(aborted, fmt.Sprintf("%d@%d..%d", a.ProducerID, a.FirstOffset, a.LastOffset))
	}
	return []string{fmt.Sprintf("unstable=%s open=[%s] aborted=[%s]", unstable, strings.Join(open, " "), strings.Join(aborted, " "))}
}

// rebuild replays the log into a new table as recovery does: batches with
// Record, markers with RecordMarker.
func (h *harness) rebuild() *Table {
	t := New(h.table.Window())
	for _, e := range h.log {
		if e.marker != nil {
			t.RecordMarker(*e.marker)
			continue
		}
		t.Record(e.hdr)
	}
	return t
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
		h.log = append(h.log, logEntry{hdr: hdr})
		h.leo = hdr.NextOffset()
		return fmt.Sprintf("Append offset=%d leo=%d", offset, h.leo)
	case Duplicate:
		o := res.Original
		return fmt.Sprintf("Duplicate offset=%d (%d..%d+%d) leo=%d", o.BaseOffset, o.FirstSeq, o.LastSeq, o.Count, h.leo)
	case Fenced:
		return fmt.Sprintf("Fenced epoch=%d leo=%d", res.Epoch, h.leo)
	case OutOfOrder:
		return fmt.Sprintf("OutOfOrder expected=%d leo=%d", res.Expected, h.leo)
	case TxnStateInvalid:
		return fmt.Sprintf("TxnStateInvalid leo=%d", h.leo)
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
	if re := h.rebuild(); !re.Equal(h.table) {
		t.Errorf("%s:%d: after %q: rebuilding from the log differs from the table", file, line, cmd)
	}
	if !h.hasMarkers() {
		headers := func(yield func(record.Header) bool) {
			for _, e := range h.log {
				if !yield(e.hdr) {
					return
				}
			}
		}
		if re := Rebuild(h.table.Window(), headers); !re.Equal(h.table) {
			t.Errorf("%s:%d: after %q: Rebuild over the log differs from the table", file, line, cmd)
		}
	}
}

func (h *harness) hasMarkers() bool {
	return slices.ContainsFunc(h.log, func(e logEntry) bool { return e.marker != nil })
}
