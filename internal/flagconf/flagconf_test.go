package flagconf

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func newFS() (*flag.FlagSet, *string, *float64, *bool, *string) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	data := fs.String("data", "", "")
	eps := fs.Float64("budget-epsilon", 0, "")
	tls := fs.Bool("allow-plaintext", false, "")
	listen := fs.String("listen", "127.0.0.1:7070", "")
	return fs, data, eps, tls, listen
}

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPrecedence(t *testing.T) {
	path := write(t, `# curator
data = "/srv/a.csv"   # trailing comment
budget-epsilon = 1_0.5
allow-plaintext = true
listen = '0.0.0.0:1'
`)
	fs, data, eps, plain, listen := newFS()
	if err := fs.Parse([]string{"--listen", "127.0.0.1:9"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PRIVBO_T_BUDGET_EPSILON", "3")
	if err := Apply(fs, path, "PRIVBO_T"); err != nil {
		t.Fatal(err)
	}
	if *data != "/srv/a.csv" || *eps != 3 || !*plain || *listen != "127.0.0.1:9" {
		t.Errorf("got data=%q eps=%g plaintext=%v listen=%q; want file, env, file, command line", *data, *eps, *plain, *listen)
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"nope = 1\n", `:1: unknown setting "nope"`},
		{"data = 'a'\n\n# c\nother = 2\n", `:4: unknown setting "other"`},
		{"Data = 'a'\n", `unknown setting "Data"`}, // flag names are exact
		{"data = 'a'\ndata = 'b'\n", ":2:1: toml: key data is already defined"},
		{"[server]\n", `unknown setting "server"`},
		{"[data]\nx = 1\n", "a table is not a value of this setting"},
		{"data = [[1]]\n", "arrays of arrays"},
		{"data = ['a,b', 'c']\n", "holds a comma"},
		{"data = 1979-05-27\n", "quote dates and times"},
		{"data = \"x\n", "config: "},
		{"data = hello\n", ":1:"},
		{"budget-epsilon = \"abc\"\n", "budget-epsilon"},
		{"data\n", ":1:"},
		{`data = "a" b` + "\n", ":1:"},
	} {
		fs, _, _, _, _ := newFS()
		fs.Parse(nil)
		path := write(t, tc.text)
		err := Apply(fs, path, "PRIVBO_T")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("config %q: error %v, want one naming the file and containing %q", tc.text, err, tc.want)
		}
	}
}

// listValue records what it is set to; it also takes a table.
type listValue struct {
	text  string
	table map[string]any
}

func (v *listValue) String() string { return v.text }
func (v *listValue) Set(s string) error {
	v.text = s
	return nil
}
func (v *listValue) SetTable(t map[string]any) error {
	v.table = t
	return nil
}

// TestArraysAndTables: an array is given to its flag joined by commas; a table only to
// a flag whose value takes tables.
func TestArraysAndTables(t *testing.T) {
	fs, _, _, _, _ := newFS()
	var features, schema listValue
	fs.Var(&features, "features", "")
	fs.Var(&schema, "schema", "")
	fs.Parse(nil)
	path := write(t, `features = ["age", "bmi", 3]

[[schema.column]]
name = "age"
lower = 18
upper = 90
`)
	if err := Apply(fs, path, "PRIVBO_T"); err != nil {
		t.Fatal(err)
	}
	if features.text != "age,bmi,3" {
		t.Errorf("features = %q, want the array joined by commas", features.text)
	}
	cols, _ := schema.table["column"].([]any)
	if len(cols) != 1 || cols[0].(map[string]any)["upper"] != int64(90) {
		t.Errorf("schema table = %#v", schema.table)
	}
}
