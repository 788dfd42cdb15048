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
		{"data = 'a'\ndata = 'b'\n", `:2: "data" is set twice`},
		{"[server]\n", "tables are not supported"},
		{"data = [1]\n", "arrays"},
		{"data = \"x\n", "unterminated"},
		{"data = hello\n", "not a string, number or boolean"},
		{"budget-epsilon = \"abc\"\n", "budget-epsilon"},
		{"data\n", "want name = value"},
		{`data = "a" b` + "\n", "unexpected"},
	} {
		fs, _, _, _, _ := newFS()
		fs.Parse(nil)
		err := Apply(fs, write(t, tc.text), "PRIVBO_T")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config %q: error %v, want one containing %q", tc.text, err, tc.want)
		}
	}
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{`a = "b\"c"`, "x = 1e3", "# c", "[t]", "y = 'z' # c", `k = "\q"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, _, ok, err := parseLine(s)
		if ok && (err == nil) && name == "" {
			t.Errorf("parseLine(%q) accepted an empty name", s)
		}
	})
}
