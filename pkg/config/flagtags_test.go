package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestFlagTags: Config's flag tags give each setting one flag and each flag one
// setting, below fields of this package's types and of others' alike.
func TestFlagTags(t *testing.T) {
	for _, tc := range []struct {
		path, flag string
		ok         bool
	}{
		{"Listen", "listen", true},
		{"Data.Scaling.Schema", "schema", true},    // two levels below another package's type
		{"Budget.Epsilon", "budget-epsilon", true}, // one type, several settings
		{"DatasetBudget.Epsilon", "dataset-budget-epsilon", true},
		{"Jobs.Kusner.A", "kusner-a", true}, // below this package's JobsConfig
		{"Ledger.CallTimeout", "ledger-timeout", true},
		{"TLS.KeyFile", "tls-key", true},
		{"Logger", "", false}, // a setting without a flag
		{"Budget", "", false}, // the parts have flags, not the whole
		{"Output.RangeEpsilon", "", false},
		{"Nothing.Here", "", false},
	} {
		if got, ok := FlagName(tc.path); got != tc.flag || ok != tc.ok {
			t.Errorf("FlagName(%q) = %q, %v, want %q, %v", tc.path, got, ok, tc.flag, tc.ok)
		}
	}
	names := FlagNames()
	if len(names) < 70 {
		t.Fatalf("FlagNames has %d settings, want the 70 or more cmd/curator's serve sets", len(names))
	}
	byFlag := map[string]string{}
	for path, flag := range names {
		if !validFlagName(flag) {
			t.Errorf("Config.%s: flag %q is not a flag name", path, flag)
		}
		if prev, ok := byFlag[flag]; ok {
			t.Errorf("flag %q names both Config.%s and Config.%s", flag, prev, path)
		}
		byFlag[flag] = path
		if !fieldPathExists(reflect.TypeFor[Config](), path) {
			t.Errorf("Config.%s: not a field path of Config", path)
		}
	}
	names["Listen"] = "changed"
	if got, _ := FlagName("Listen"); got != "listen" {
		t.Errorf("changing FlagNames' map changed FlagName(Listen) to %q", got)
	}
}

// TestFlagTagsRefuseMistakes: a tag naming a field that does not exist, a name that
// is no flag or two flags for one setting panic when the tags are first read.
func TestFlagTagsRefuseMistakes(t *testing.T) {
	type inner struct{ A, B int }
	for name, typ := range map[string]reflect.Type{
		"missing field": reflect.TypeFor[struct {
			X inner `flag:"A=x-a,C=x-c"`
		}](),
		"not a flag name": reflect.TypeFor[struct {
			X int `flag:"--x"`
		}](),
		"upper case": reflect.TypeFor[struct {
			X int `flag:"Xy"`
		}](),
		"empty word": reflect.TypeFor[struct {
			X int `flag:"x--y"`
		}](),
		"two flags": reflect.TypeFor[struct {
			X inner `flag:"A=x-a,A=x-b"`
		}](),
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: walkFlagTags did not panic", name)
				}
			}()
			walkFlagTags(typ, "", map[string]string{})
		}()
	}
	got := map[string]string{}
	walkFlagTags(reflect.TypeFor[struct {
		X inner `flag:"A=x-a,B=x-b"`
		Y int   `flag:"y"`
		Z int
	}](), "", got)
	want := map[string]string{"X.A": "x-a", "X.B": "x-b", "Y": "y"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("walkFlagTags = %v, want %v", got, want)
	}
}

// configRef is a setting named in a message, Config.<path>; "curator.Config.X" names
// another package's Config.
var configRef = regexp.MustCompile(`(?:^|[^.\w])Config((?:\.[A-Z][A-Za-z0-9]*)+)`)

// TestMessagesNameTaggedSettings: every setting this package's messages name as
// Config.<path>, and every FieldError's Field, is a field of Config with a flag tag,
// so that a front end can tell the operator the flag to set (FlagName) and a renamed
// field cannot leave a message naming the old one.
func TestMessagesNameTaggedSettings(t *testing.T) {
	// The messages of the configuration, of the composition root, of storage opening
	// and of the private scaling estimate name the settings.
	var files []string
	for _, pattern := range []string{"*.go", "../server/*.go", "../storage/*.go", "../curator/scaling.go"} {
		more, err := filepath.Glob(pattern)
		if err != nil || len(more) == 0 {
			t.Fatalf("glob %s: %v, %d files", pattern, err, len(more))
		}
		files = append(files, more...)
	}
	check := func(pos token.Position, path string) {
		if _, ok := FlagName(path); !ok {
			t.Errorf("%s: names Config.%s, which no flag tag of Config names", pos, path)
		}
	}
	refs := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || filepath.Base(name) == "flagtags.go" {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING {
					for _, m := range configRef.FindAllStringSubmatch(s, -1) {
						refs++
						check(fset.Position(n.Pos()), m[1][1:])
					}
				}
			case *ast.CallExpr: // fieldError("Path", ...)
				if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "fieldError" && len(n.Args) > 0 {
					if lit, ok := n.Args[0].(*ast.BasicLit); ok {
						s, _ := strconv.Unquote(lit.Value)
						refs++
						check(fset.Position(lit.Pos()), s)
					}
				}
			case *ast.KeyValueExpr: // FieldError{Field: "Path"}
				if id, ok := n.Key.(*ast.Ident); ok && id.Name == "Field" {
					if lit, ok := n.Value.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						s, _ := strconv.Unquote(lit.Value)
						refs++
						check(fset.Position(lit.Pos()), s)
					}
				}
			}
			return true
		})
	}
	if refs < 100 {
		t.Fatalf("found %d settings named in messages: too few for the check to mean anything", refs)
	}
}
