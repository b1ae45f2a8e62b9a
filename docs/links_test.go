package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// linkRE matches a Markdown link's target: [text](target).
var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinksResolve checks that every relative link in the README and the
// guides names a file that exists and, with a #fragment, a heading of
// that file, so moving or renaming a document cannot leave dead links.
func TestLinksResolve(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../README.md")
	checked := 0
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkRE.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			resolved := f
			if path != "" {
				resolved = filepath.Join(filepath.Dir(f), path)
			}
			if _, err := os.Stat(resolved); err != nil {
				t.Errorf("%s links to %s, which does not exist", f, target)
				continue
			}
			checked++
			if frag != "" && strings.HasSuffix(resolved, ".md") && !hasAnchor(t, resolved, frag) {
				t.Errorf("%s links to %s: %s has no heading with anchor #%s", f, target, resolved, frag)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d links checked; the pattern no longer matches the documents", checked)
	}
}

// hasAnchor reports whether file has a heading whose GitHub anchor is frag.
func hasAnchor(t *testing.T, file, frag string) bool {
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "#") && anchor(strings.TrimLeft(line, "# ")) == frag {
			return true
		}
	}
	return false
}

// anchor is GitHub's anchor of a heading: lower case, spaces to dashes,
// punctuation other than dashes and underscores dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}
