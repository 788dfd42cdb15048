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

// flagsWithoutConfigField are serve's flags that no flag tag of config.Config names,
// each with the reason it sets no field of its own.
var flagsWithoutConfigField = map[string]string{
	"config":             "names the configuration file that gives the other flags",
	"addr-file":          "where serve writes the address once it listens, after server.Start",
	"log-level":          "builds Config.Logger, with --log-format",
	"log-format":         "builds Config.Logger, with --log-level",
	"evaluator-epsilons": "declares the Epsilon of Config.Jobs.Evaluators entries, by the names --evaluators gives them",
	"evaluator-rdp":      "declares the RDP curve of Config.Jobs.Evaluators entries, by the names --evaluators gives them",
	"evaluator-timeout":  "the Timeout of every Config.Jobs.Evaluators entry",
}

func serveFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	(&serveFlags{}).register(fs)
	return fs
}

// TestConfigFlags: every flag the tags of config.Config name is one of serve's, and
// every flag of serve is named by the tag of exactly one setting or sets none
// (flagsWithoutConfigField), so that no rewritten message names a flag that does not
// exist and each flag has one setting.
func TestConfigFlags(t *testing.T) {
	fs := serveFlagSet()
	tagged := map[string][]string{}
	for path, name := range config.FlagNames() {
		if fs.Lookup(name) == nil {
			t.Errorf("Config.%s: its tag names -%s, which serve does not have", path, name)
		}
		tagged[name] = append(tagged[name], path)
	}
	fs.VisitAll(func(f *flag.Flag) {
		paths := tagged[f.Name]
		_, none := flagsWithoutConfigField[f.Name]
		switch {
		case none && len(paths) > 0:
			t.Errorf("-%s is listed as setting no Config field, but the tags of %v name it", f.Name, paths)
		case !none && len(paths) != 1:
			t.Errorf("-%s is named by the flag tags of %d Config fields %v, want 1 (or a place in flagsWithoutConfigField)", f.Name, len(paths), paths)
		}
	})
	for name := range flagsWithoutConfigField {
		if fs.Lookup(name) == nil {
			t.Errorf("flagsWithoutConfigField lists -%s, which serve does not have", name)
		}
	}
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

// TestFlagSetsTaggedField: the flag a field's tag names sets that field: given a
// value, serve's configuration holds it there, where without the flag it does not.
// A tag naming another flag of the same type would pass TestConfigFlags, not this.
func TestFlagSetsTaggedField(t *testing.T) {
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
	for path, name := range config.FlagNames() {
		was := configField(base, path)
		arg, ok := special[name]
		if !ok {
			arg = probeValue(was)
		}
		got := configField(build(append(required, "--"+name, arg)), path)
		if reflect.DeepEqual(got.Interface(), was.Interface()) {
			t.Errorf("--%s %s left Config.%s at %v: the flag does not set the field whose tag names it", name, arg, path, got)
		}
	}
}

// TestFlagNamesInMessages: the server's refusals and warnings reach the operator with
// the flags to type; a FieldError's field has a flag; wrapping keeps the error chain.
func TestFlagNamesInMessages(t *testing.T) {
	fe := &config.FieldError{Field: "StateDir", Msg: "Config.StateDir is required"}
	err := withFlagNames(fmt.Errorf("starting: %w", fe))
	if err.Error() != "starting: server: --state is required" {
		t.Errorf("rewritten = %q", err)
	}
	var got *config.FieldError
	if !errors.As(err, &got) || got != fe {
		t.Error("the rewritten error does not unwrap to the FieldError")
	}
	if name, ok := config.FlagName(got.Field); !ok || name != "state" {
		t.Errorf("config.FlagName(%q) = %q, %v, want state, true", got.Field, name, ok)
	}
	cause := errors.New("cause")
	if err := withFlagNames(&config.FieldError{Field: "Jobs.Lease", Msg: "Config.Jobs.Lease", Err: cause}); !errors.Is(err, cause) || err.Error() != "server: --job-lease: cause" {
		t.Errorf("rewritten = %q, errors.Is(cause) = %v", err, errors.Is(err, cause))
	}
	if !errors.Is(withFlagNames(flag.ErrHelp), flag.ErrHelp) {
		t.Error("flag.ErrHelp lost")
	}
	for in, want := range map[string]string{
		"Config.Output.Lower/Config.Output.Upper and Config.Unknown.Field, Config.Logger": "--output-lower/--output-upper and Config.Unknown.Field, Config.Logger",
		"(Config.Jobs.Kusner.A, «Config.TLS.KeyFile»)":                                    "(--kusner-a, «--tls-key»)",
		"Config.Budget.Epsilon.": "--budget-epsilon.",
		// Another package's Config, and names that only end in Config, stay.
		"curator.Config.MaxQueryIndices, MyConfig.Listen": "curator.Config.MaxQueryIndices, MyConfig.Listen",
	} {
		if got := flagText(in); got != want {
			t.Errorf("flagText(%q) = %q, want %q", in, got, want)
		}
	}
	cfg := config.Config{Budget: ledger.Cost{Epsilon: 1}, Output: curator.OutputPrivacy{Mechanism: "none"},
		Evaluation: curator.Evaluation{Mode: curator.EvaluateProgram}, AllowExactProgramAnswers: true}
	ws := config.Warnings(cfg)
	if len(ws) != 3 {
		t.Fatalf("warnings = %q, want three (zero δ, exact answers, exact program answers)", ws)
	}
	for i, want := range []string{"--budget-delta is 0", "--output-privacy none: query answers are EXACT", "--evaluate program with exact answers (--allow-exact-program-answers)"} {
		if w := flagText(ws[i]); !strings.Contains(w, want) || strings.Contains(w, "Config.") {
			t.Errorf("warning %d = %q, want it to contain %q and no Config field", i, w, want)
		}
	}
}
