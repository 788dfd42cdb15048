package main

import (
	"errors"
	"flag"
	"reflect"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/server"
)

// TestConfigFlags: every path of the table is a field of server.Config and every flag
// one of serve's, so that no rewritten message names a flag that does not exist.
func TestConfigFlags(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	(&serveFlags{}).register(fs)
	for path, fl := range configFlags {
		typ := reflect.TypeFor[server.Config]()
		for _, name := range strings.Split(path, ".") {
			for typ.Kind() == reflect.Pointer {
				typ = typ.Elem()
			}
			f, ok := typ.FieldByName(name)
			if !ok {
				t.Errorf("%s: server.Config has no field %s", path, name)
				break
			}
			typ = f.Type
		}
		if fs.Lookup(strings.TrimPrefix(fl, "--")) == nil {
			t.Errorf("%s: serve has no flag %s", path, fl)
		}
	}
}

// TestFlagNamesInMessages: the server's refusals and warnings reach the operator with
// the flags to type; a FieldError's field has a flag; wrapping keeps the error chain.
func TestFlagNamesInMessages(t *testing.T) {
	fe := &server.FieldError{Field: "StateDir", Msg: "Config.StateDir is required"}
	err := withFlagNames(fe)
	if err.Error() != "server: --state is required" {
		t.Errorf("rewritten = %q", err)
	}
	var got *server.FieldError
	if !errors.As(err, &got) || got != fe {
		t.Error("the rewritten error does not unwrap to the FieldError")
	}
	if !errors.Is(withFlagNames(flag.ErrHelp), flag.ErrHelp) {
		t.Error("flag.ErrHelp lost")
	}
	if s := flagText("Config.Output.Lower/Config.Output.Upper and Config.Unknown.Field"); s != "--output-lower/--output-upper and Config.Unknown.Field" {
		t.Errorf("flagText = %q", s)
	}
	cfg := server.Config{Budget: ledger.Cost{Epsilon: 1}, Output: curator.OutputPrivacy{Mechanism: "none"},
		Evaluation: curator.Evaluation{Mode: curator.EvaluateProgram}, AllowExactProgramAnswers: true}
	ws := server.Warnings(cfg)
	if len(ws) != 3 {
		t.Fatalf("warnings = %q, want three (zero δ, exact answers, exact program answers)", ws)
	}
	for i, want := range []string{"--budget-delta is 0", "--output-privacy none: query answers are EXACT", "--evaluate program with exact answers (--allow-exact-program-answers)"} {
		if w := flagText(ws[i]); !strings.Contains(w, want) || strings.Contains(w, "Config.") {
			t.Errorf("warning %d = %q, want it to contain %q and no Config field", i, w, want)
		}
	}
}
