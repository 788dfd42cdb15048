package testrace

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatisticalCallsAreFound checks that every call of Statistical in the repository
// is where scripts/statistical.sh finds it: the first statement of a top-level test,
// written testrace.Statistical(t). A call anywhere else would skip its test in the race
// pass and leave it out of the second, so that it never ran.
func TestStatisticalCallsAreFound(t *testing.T) {
	fset := token.NewFileSet()
	found := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && d.Name() != "." && d.Name() != "..") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		first := map[*ast.CallExpr]bool{}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || len(fn.Body.List) == 0 {
				continue
			}
			if es, ok := fn.Body.List[0].(*ast.ExprStmt); ok {
				if c, ok := es.X.(*ast.CallExpr); ok && isStatistical(c) && len(c.Args) == 1 {
					if id, ok := c.Args[0].(*ast.Ident); ok && id.Name == "t" {
						first[c] = true
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok && isStatistical(c) {
				found++
				if !first[c] {
					t.Errorf("%s: testrace.Statistical(t) must be the first statement of a top-level test, or scripts/statistical.sh never runs it", fset.Position(c.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 10 {
		t.Errorf("found %d calls of testrace.Statistical, want the repository's statistical tests (at least 10)", found)
	}
}

func isStatistical(c *ast.CallExpr) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Statistical" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "testrace"
}
