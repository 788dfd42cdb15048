package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// flagName matches a command-line flag named in text ("--kusner-a", "--release-memory").
var flagName = regexp.MustCompile(`(^|[^-\w])--[a-z][a-z0-9]*(-[a-z0-9]+)*\b`)

// TestNoFlagNamedToClients checks that no string literal in the non-test Go files of
// this module's packages that pkg/server links names a command-line flag. Their texts
// are what a refusal, a guarantee or a job error says to a remote modeler, who cannot
// set the curator's flags and must not be told its configuration's names: the curator's
// operator knows its settings, a modeler is told to ask the operator (docs/DESIGN.md:
// libraries never name flags).
func TestNoFlagNamedToClients(t *testing.T) {
	for _, tc := range []struct {
		s    string
		flag bool
	}{
		{"(curator --kusner-a, --kusner-tau)", true},
		{"--release-memory", true},
		{"use --projection-mechanism gaussian", true},
		{"ask the curator's operator to raise the per-identity budget", false},
		{"a range a--b", false},
		{"-- a separator --", false},
	} {
		if got := flagName.MatchString(tc.s); got != tc.flag {
			t.Fatalf("flagName.MatchString(%q) = %v, want %v", tc.s, got, tc.flag)
		}
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", `{{if not .Standard}}{{.ImportPath}}|{{.Dir}}|{{join .GoFiles ","}}{{end}}`,
		"github.com/privbo/privbo/pkg/server").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const module = "github.com/privbo/privbo/"
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "|", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[0], module) || strings.HasPrefix(parts[0], module+"proto/") {
			continue
		}
		for _, name := range strings.Split(parts[2], ",") {
			if name == "" {
				continue
			}
			if parts[0] == module+"pkg/config" && name == "bind.go" {
				continue // the declaration of the operator's settings, their names and help
			}
			path := filepath.Join(parts[1], name)
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					s = lit.Value
				}
				if m := flagName.FindString(s); m != "" {
					t.Errorf("%s: a string names the flag %q: %.120q", fset.Position(lit.Pos()), strings.TrimSpace(m), s)
				}
				return true
			})
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d files: go list found too little for the check to mean anything", checked)
	}
}

// TestSettingsNamedByTheirFlags: the configuration's and the server's messages name a
// setting as its flag, from its declaration (config.Config.Flag), never as a
// Config.<path> for a front end to rewrite.
func TestSettingsNamedByTheirFlags(t *testing.T) {
	configPath := regexp.MustCompile(`(^|[^.\w])Config\.[A-Z]`)
	files, _ := filepath.Glob("*.go")
	more, _ := filepath.Glob("../config/*.go")
	checked := 0
	for _, path := range append(files, more...) {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && configPath.MatchString(lit.Value) {
				t.Errorf("%s: a message names a setting by its Config path: %.120s", fset.Position(lit.Pos()), lit.Value)
			}
			return true
		})
	}
	if checked < 5 {
		t.Fatalf("checked only %d files", checked)
	}
}
