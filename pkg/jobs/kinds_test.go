package jobs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/jobs/jobspec"
)

// TestNoKindInTheManager: the generic job code — the manager, its store and the
// report renderer — names no job kind and reads no kind's settings: it asks the kind
// (jobspec.Kind), so that a new kind touches none of it.
func TestNoKindInTheManager(t *testing.T) {
	names := map[string]bool{}
	for _, k := range []jobspec.Kind{jobspec.KusnerKind, jobspec.DPHyPOKind} {
		names[k.Name()] = true
	}
	fields := map[string]bool{"Kusner": true, "DPHyPO": true} // jobspec.Spec's kind fields
	scanned := 0
	for _, dir := range []string{".", "jobreport"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			scanned++
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.BasicLit:
					if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && names[s] {
						t.Errorf("%s: the kind name %s", fset.Position(n.Pos()), n.Value)
					}
				case *ast.SelectorExpr:
					if fields[n.Sel.Name] {
						t.Errorf("%s: a kind's settings (.%s)", fset.Position(n.Pos()), n.Sel.Name)
					}
				}
				return true
			})
		}
	}
	if scanned < 5 {
		t.Fatalf("scanned %d files; the test looks in the wrong place", scanned)
	}
}
