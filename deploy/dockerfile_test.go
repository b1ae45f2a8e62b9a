// Package deploy holds no code: its tests check the deployment files
// (the Dockerfile at the module root, deploy/docker, deploy/systemd) as
// far as a machine without a Docker engine or a running systemd allows.
package deploy_test

import (
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// root is the module root, relative to this package.
const root = ".."

// instruction is one Dockerfile instruction: its keyword in upper case
// and its arguments, continuation lines joined.
type instruction struct {
	cmd  string
	args string
}

func parseDockerfile(t *testing.T) []instruction {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if more, ok := strings.CutSuffix(line, "\\"); ok {
			cur += more + " "
			continue
		}
		cur += line
		cmd, args, _ := strings.Cut(cur, " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur = ""
	}
	return out
}

// words splits a shell command line into words, honouring double quotes
// (all the Dockerfile's RUN lines use).
func words(s string) []string {
	var out []string
	var w strings.Builder
	in, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				out = append(out, w.String())
				w.Reset()
			}
			in = false
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, w.String())
	}
	return out
}

// goBuild is a Dockerfile RUN of go build: its environment assignments,
// its arguments after "go", and the binary it writes.
type goBuild struct {
	env, args []string
	out       string
}

func goBuilds(ins []instruction) []goBuild {
	var out []goBuild
	for _, in := range ins {
		w := words(in.args)
		i := slices.Index(w, "go")
		if in.cmd != "RUN" || i < 0 || i+1 >= len(w) || w[i+1] != "build" {
			continue
		}
		b := goBuild{env: w[:i], args: w[i+1:]}
		if o := slices.Index(b.args, "-o"); o >= 0 && o+1 < len(b.args) {
			b.out = b.args[o+1]
		}
		out = append(out, b)
	}
	return out
}

// buildStatic runs the Dockerfile's go builds here, writing the binaries
// into dir instead of /out, and returns their paths by the Dockerfile's
// name (/out/minikafka-node ...).
func buildStatic(t *testing.T, dir string) map[string]string {
	t.Helper()
	builds := goBuilds(parseDockerfile(t))
	if len(builds) < 2 {
		t.Fatalf("the Dockerfile has %d go build commands, want the node's and the CLI's", len(builds))
	}
	bins := map[string]string{}
	for _, b := range builds {
		if !slices.Contains(b.env, "CGO_ENABLED=0") || b.out == "" {
			t.Fatalf("Dockerfile: go build %v: want CGO_ENABLED=0 and -o", b.args)
		}
		local := filepath.Join(dir, path.Base(b.out))
		args := slices.Clone(b.args)
		args[slices.Index(args, "-o")+1] = local
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), b.env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		bins[b.out] = local
	}
	return bins
}

// checkStatic fails t unless bin is a static ELF executable built with
// CGO_ENABLED=0: no interpreter, no dynamic section, no libraries.
func checkStatic(t *testing.T, bin string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a %v program header: dynamically linked", bin, p.Type)
		}
	}
	if s := f.Section(".dynamic"); s != nil {
		t.Errorf("%s has a .dynamic section", bin)
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("%s imports libraries %v (%v)", bin, libs, err)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	cgo := ""
	for _, s := range info.Settings {
		if s.Key == "CGO_ENABLED" {
			cgo = s.Value
		}
	}
	if cgo != "0" {
		t.Errorf("%s: go version -m says CGO_ENABLED=%q, want 0", bin, cgo)
	}
}

// TestDockerImageBinariesAreStatic builds the node and the CLI with the
// Dockerfile's own commands and finds them static, as distroless/static
// (no libc) needs.
func TestDockerImageBinariesAreStatic(t *testing.T) {
	for name, bin := range buildStatic(t, t.TempDir()) {
		t.Run(path.Base(name), func(t *testing.T) { checkStatic(t, bin) })
	}
}

// copyInstr is a COPY: its sources, destination and --from stage.
type copyInstr struct {
	from string
	srcs []string
	dst  string
}

func copies(ins []instruction) []copyInstr {
	var out []copyInstr
	for _, in := range ins {
		if in.cmd != "COPY" {
			continue
		}
		var c copyInstr
		var paths []string
		for _, w := range words(in.args) {
			switch {
			case strings.HasPrefix(w, "--from="):
				c.from = strings.TrimPrefix(w, "--from=")
			case strings.HasPrefix(w, "--"):
			default:
				paths = append(paths, w)
			}
		}
		c.srcs, c.dst = paths[:len(paths)-1], paths[len(paths)-1]
		out = append(out, c)
	}
	return out
}

// dest is where src lands when copied to dst (a directory when it ends
// in /).
func dest(src, dst string) string {
	if strings.HasSuffix(dst, "/") {
		return dst + path.Base(strings.TrimSuffix(src, "/"))
	}
	return dst
}
