package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

var updateDoc = flag.Bool("update", false, "rewrite docs/configuration.md's key table from keys()")

const (
	configDoc      = "../../docs/configuration.md"
	configDocBegin = "<!-- keys: generated from cmd/node keys() by `go test ./cmd/node -run TestConfigDoc -update` -->"
	configDocEnd   = "<!-- end of keys -->"
)

// TestConfigDocMatchesKeys checks that docs/configuration.md's table lists
// every key of keys() with its default and help text, so the document
// cannot drift from the binary; -update rewrites the table.
func TestConfigDocMatchesKeys(t *testing.T) {
	doc, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	begin, end := strings.Index(text, configDocBegin), strings.Index(text, configDocEnd)
	if begin < 0 || end < begin {
		t.Fatalf("%s lacks the markers %q and %q", configDoc, configDocBegin, configDocEnd)
	}
	want := keyTable()
	got := text[begin+len(configDocBegin) : end]
	if got == want {
		return
	}
	if *updateDoc {
		text = text[:begin+len(configDocBegin)] + want + text[end:]
		if err := os.WriteFile(configDoc, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(gl), len(wl)) {
		if i >= len(gl) || i >= len(wl) || gl[i] != wl[i] {
			t.Fatalf("%s's key table differs from keys() at line %d:\n doc:  %q\n keys: %q\nrun go test ./cmd/node -run TestConfigDoc -update",
				configDoc, i+1, at(gl, i), at(wl, i))
		}
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(none)"
}

// keyTable renders keys() as a Markdown table.
func keyTable() string {
	var b strings.Builder
	b.WriteString("\n| key | default | meaning |\n| --- | --- | --- |\n")
	for _, k := range keys() {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", k.name, docDefault(k.def), strings.ReplaceAll(k.help, "|", `\|`))
	}
	return b.String()
}

// docDefault shows a key's default as a user writes it in YAML.
func docDefault(v any) string {
	switch v := v.(type) {
	case string:
		if v == "" {
			return "none"
		}
		return "`" + v + "`"
	case []string:
		if len(v) == 0 {
			return "none"
		}
		return "`" + strings.Join(v, ",") + "`"
	case time.Duration:
		return "`" + v.String() + "`"
	default:
		return fmt.Sprintf("`%v`", v)
	}
}
