// Package docs holds the project's notes; its test checks that
// architecture.md names only functions that exist.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// packages maps the package names architecture.md uses to their folders.
var packages = map[string]string{
	"client": "client", "kafkaapi": "kafkaapi", "broker": "broker", "partition": "partition",
	"multiraft": "multiraft", "fsm": "fsm", "producerstate": "producerstate", "record": "record",
	"frame": "internal/frame", "metadata": "metadata", "membership": "membership",
	"groupcoord": "groupcoord", "txncoord": "txncoord", "metrics": "metrics", "vfs": "internal/vfs",
	"controller": "broker/controller", "seglog": "partition/seglog", "replicas": "broker/replicas",
	"coordhost": "broker/coordhost", "kafkabackend": "broker/kafkabackend",
}

// A name is pkg.Func or pkg.Type.Method.
var nameRE = regexp.MustCompile(`\b([a-z]+)\.([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?\b`)

func TestArchitectureNamesExist(t *testing.T) {
	doc, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	decls := map[string]map[string]bool{} // package -> "Func" or "Type.Method"
	checked := 0
	for _, m := range nameRE.FindAllStringSubmatch(string(doc), -1) {
		dir, ok := packages[m[1]]
		if !ok || strings.HasSuffix(m[0], ".md") || strings.HasSuffix(m[0], ".go") {
			continue
		}
		if decls[m[1]] == nil {
			decls[m[1]] = declared(t, filepath.Join("..", dir))
		}
		want := m[2]
		if m[3] != "" {
			want += "." + m[3]
		}
		if !decls[m[1]][want] {
			t.Errorf("architecture.md names %s, which package %s does not declare", m[0], dir)
		}
		checked++
	}
	if checked < 30 {
		t.Fatalf("only %d names checked; the pattern no longer matches the document", checked)
	}
}

// declared lists the functions, methods (as Type.Method) and types of the
// non-test files in dir.
func declared(t *testing.T, dir string) map[string]bool {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					name := d.Name.Name
					if d.Recv != nil && len(d.Recv.List) == 1 {
						typ := d.Recv.List[0].Type
						if s, ok := typ.(*ast.StarExpr); ok {
							typ = s.X
						}
						switch g := typ.(type) { // a generic type's receiver: T[P] or T[P, Q]
						case *ast.IndexExpr:
							typ = g.X
						case *ast.IndexListExpr:
							typ = g.X
						}
						if id, ok := typ.(*ast.Ident); ok {
							name = id.Name + "." + name
						}
					}
					out[name] = true
				case *ast.GenDecl:
					for _, s := range d.Specs {
						if ts, ok := s.(*ast.TypeSpec); ok {
							out[ts.Name.Name] = true
						}
					}
				}
			}
		}
	}
	return out
}
