package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/ledger"
)

// flagsWithoutConfigField are serve's flags that config.Config.Bind does not declare,
// each with the reason it sets no field of its own.
var flagsWithoutConfigField = map[string]string{
	"config":             "names the configuration file that gives the other flags",
	"addr-file":          "where serve writes the address once it listens, after server.Start",
	"log-level":          "builds Config.Logger, with --log-format",
	"log-format":         "builds Config.Logger, with --log-level",
	"evaluator-epsilons": "declares the Epsilon of the --evaluators entries, by the names it gives them",
	"evaluator-rdp":      "declares the RDP curve of the --evaluators entries, by the names it gives them",
	"evaluator-timeout":  "the Timeout of every --evaluators entry",
}

func serveFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	(&serveFlags{}).register(fs)
	return fs
}

// TestConfigFlags: every setting config.Config.Bind declares is a flag of serve, and
// every flag of serve is a declared setting or sets none (flagsWithoutConfigField), so
// that no message names a flag that does not exist.
func TestConfigFlags(t *testing.T) {
	fs := serveFlagSet()
	cfg := config.NewConfig()
	set := cfg.Bind()
	for _, s := range set.All() {
		if fs.Lookup(s.Name) == nil {
			t.Errorf("setting %s is not a flag of serve", s.Name)
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		_, declared := set.Lookup(f.Name)
		_, none := flagsWithoutConfigField[f.Name]
		if declared == none {
			t.Errorf("-%s: declared by config.Config.Bind %v, listed as setting no field %v: want exactly one", f.Name, declared, none)
		}
	})
}

// configField is the field of cfg at path ("Output.Epsilon").
func configField(cfg config.Config, path string) reflect.Value {
	v := reflect.ValueOf(cfg)
	for name := range strings.SplitSeq(path, ".") {
		for v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		v = v.FieldByName(name)
	}
	return v
}

// probeValue is a value of a flag for the setting cur, unlike cur.
func probeValue(cur reflect.Value) string {
	if d, ok := cur.Interface().(time.Duration); ok {
		return (d + 7*time.Second).String()
	}
	switch cur.Kind() {
	case reflect.String, reflect.Slice:
		return "probe"
	case reflect.Bool:
		return strconv.FormatBool(!cur.Bool())
	case reflect.Int, reflect.Uint64:
		return "7"
	case reflect.Int64:
		return "300MiB" // bytes
	case reflect.Float64:
		return "0.375"
	}
	return fmt.Sprintf("<no probe for %s>", cur.Type())
}

// TestFlagSetsDeclaredField: the flag of each declared setting sets its field: given a
// value, serve's configuration holds it there, where without the flag it does not (the
// settings serve parses itself, such as --features, included).
func TestFlagSetsDeclaredField(t *testing.T) {
	required := []string{"--data", "d.csv", "--target", "y", "--dataset-id", "probe-id", "--state", "st", "--budget-epsilon", "1"}
	build := func(args []string) config.Config {
		t.Helper()
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		f := &serveFlags{}
		f.register(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		cfg, err := f.build()
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return cfg
	}
	schema := filepath.Join(t.TempDir(), "probe.schema.csv")
	if err := os.WriteFile(schema, []byte("column,lower,upper\na,0,1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	special := map[string]string{"scaling": "none" /* the default is private */, "schema": schema, "evaluators": "probe=prog"}
	base := build(required)
	for name, path := range settingPaths(t) {
		was := configField(base, path)
		arg, ok := special[name]
		if !ok {
			arg = probeValue(was)
		}
		got := configField(build(append(required, "--"+name, arg)), path)
		if reflect.DeepEqual(got.Interface(), was.Interface()) {
			t.Errorf("--%s %s left Config.%s at %v: the flag does not set the field declared with it", name, arg, path, got)
		}
	}
}

// TestFlagNamesInMessages: the configuration's refusals and warnings name the flags
// to type, and a FieldError names its setting.
func TestFlagNamesInMessages(t *testing.T) {
	_, _, err := config.Config{Budget: ledger.Cost{Epsilon: 1}}.Resolve()
	var fe *config.FieldError
	if !errors.As(err, &fe) || fe.Field != "state" || !strings.HasPrefix(err.Error(), "server: --state is required") {
		t.Errorf("Resolve without a state directory = %v (%#v), want a FieldError on state naming --state", err, fe)
	}
	_, _, err = config.Config{StateDir: "s", DatasetID: "d", Budget: ledger.Cost{Epsilon: 1}, Jobs: config.JobsConfig{Lease: 10 * time.Millisecond}}.Resolve()
	if !errors.As(err, &fe) || fe.Field != "job-lease" || !strings.Contains(err.Error(), "--job-lease 10ms: must be at least 1s") {
		t.Errorf("Resolve with a 10ms lease = %v, want the command line's refusal", err)
	}
	cfg := config.Config{Budget: ledger.Cost{Epsilon: 1}, Output: curator.OutputPrivacy{Mechanism: "none"},
		Evaluation: curator.Evaluation{Mode: curator.EvaluateProgram}, AllowExactProgramAnswers: true}
	ws := config.Warnings(cfg)
	if len(ws) != 3 {
		t.Fatalf("warnings = %q, want three (zero δ, exact answers, exact program answers)", ws)
	}
	for i, want := range []string{"--budget-delta is 0", "--output-privacy none: query answers are EXACT", "--evaluate program with exact answers (--allow-exact-program-answers)"} {
		if w := ws[i]; !strings.Contains(w, want) || strings.Contains(w, "Config.") {
			t.Errorf("warning %d = %q, want it to contain %q and no Config field", i, w, want)
		}
	}
}
