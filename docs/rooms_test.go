package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoRoomHoldsTheNode checks the broker's split (architecture.md, "The
// broker's rooms"): broker.Node is the wiring, and no other type of the
// broker package, nor any type of a room under broker/, keeps a Node in a
// field. A room that needs something of the node declares an interface
// for it and is handed the part that implements it.
func TestNoRoomHoldsTheNode(t *testing.T) {
	dirs := []string{filepath.Join("..", "broker")}
	entries, err := os.ReadDir(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(dirs[0], e.Name()))
		}
	}
	types := 0
	for _, dir := range dirs {
		for _, f := range parseDir(t, dir) {
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok || (ts.Name.Name == "Node" && dir == dirs[0]) {
					return true
				}
				types++
				for _, fld := range st.Fields.List {
					if holdsNode(fld.Type) {
						t.Errorf("%s: type %s keeps the node in a field; give it the narrow parts it needs", dir, ts.Name.Name)
					}
				}
				return true
			})
		}
	}
	if types < 20 {
		t.Fatalf("only %d struct types read under broker/; the walk no longer finds the code", types)
	}
}

// holdsNode reports whether a field's type is Node, *Node or broker.Node
// (in any pointer, slice or map of them).
func holdsNode(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name == "Node"
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == "broker" && x.Sel.Name == "Node"
	case *ast.StarExpr:
		return holdsNode(x.X)
	case *ast.ArrayType:
		return holdsNode(x.Elt)
	case *ast.MapType:
		return holdsNode(x.Key) || holdsNode(x.Value)
	}
	return false
}

// parseDir parses the non-test Go files of dir.
func parseDir(t *testing.T, dir string) []*ast.File {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}
