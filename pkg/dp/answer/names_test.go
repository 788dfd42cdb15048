package answer_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/projection"
)

// registries are the files that spell the mechanisms' configured names: everything
// else asks a parsed mechanism or its registry.
var registries = []string{"pkg/dp/answer/registry.go", "pkg/projection/mechanism.go"}

// otherMeanings are files where a name's spelling means something else: the scaling
// mode "none" of package dataset, the modeler's likelihoods of a recommendation (a
// noise model, chosen by the curator's stated noise family, not by these names), and
// the noise families' own names (a mechanism states its family; none names it).
var otherMeanings = map[string][]string{
	"pkg/dataset/scaling.go": {answer.MechanismExact},
	"pkg/modeler/modeler.go": {answer.MechanismLaplace, answer.MechanismGaussian},
	"pkg/noise/noise.go":     {answer.MechanismExact, answer.MechanismLaplace, answer.MechanismGaussian},
}

// TestNamesOnlyInRegistries: no non-test Go file of the module spells a mechanism's
// name as a string literal outside the registries, so a new mechanism is one type and
// one registry line, with no string branch to find elsewhere. Log field keys
// (zap.Bool("lifted", …)) name a field, not a mechanism, and are allowed.
func TestNamesOnlyInRegistries(t *testing.T) {
	names := append(answer.Names(), projection.MechanismNames()...)
	root := filepath.Join("..", "..", "..")
	scanned := 0
	var found []string
	for _, dir := range []string{"cmd", "pkg", "internal", "examples"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if slices.Contains(registries, rel) {
				return nil
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			scanned++
			keys := map[*ast.BasicLit]bool{} // first arguments of zap field constructors
			ast.Inspect(f, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok && len(call.Args) > 0 {
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
						if id, ok := sel.X.(*ast.Ident); ok && id.Name == "zap" {
							if lit, ok := call.Args[0].(*ast.BasicLit); ok {
								keys[lit] = true
							}
						}
					}
				}
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING || keys[lit] {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil || !slices.Contains(names, s) || slices.Contains(otherMeanings[rel], s) {
					return true
				}
				found = append(found, fset.Position(lit.Pos()).String()+": "+lit.Value)
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if scanned < 100 {
		t.Fatalf("scanned %d Go files under %s: the check would pass vacuously", scanned, root)
	}
	for _, f := range found {
		t.Errorf("%s: a mechanism's name outside its registry (%v); parse the name once and ask the mechanism", f, registries)
	}
}
