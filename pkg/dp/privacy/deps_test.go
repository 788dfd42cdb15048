package privacy

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/privbo/privbo/"

// deps returns the import paths pkg links (go list -deps, test files excluded).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", module+pkg).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, msg)
	}
	return strings.Fields(string(out))
}

// TestAlgorithmsDoNotImportStorage: the algorithms state their guarantees in this
// package's types, so none of them links the privacy ledger (the storage of the
// curator's charges) or the job manager that charges it.
func TestAlgorithmsDoNotImportStorage(t *testing.T) {
	forbidden := []string{module + "pkg/ledger", module + "pkg/jobs"}
	// The check must be able to see what it forbids: the job manager links the ledger.
	if !slices.Contains(deps(t, "pkg/jobs"), forbidden[0]) {
		t.Fatalf("go list finds no pkg/ledger under pkg/jobs: the check below would pass vacuously")
	}
	for _, pkg := range []string{"pkg/projection", "pkg/tuning", "pkg/dphypo", "pkg/kusner", "pkg/modeler", "pkg/gpucb", "pkg/jobs/jobspec", "pkg/dp/privacy"} {
		ds := deps(t, pkg)
		for _, f := range forbidden {
			if slices.Contains(ds, f) {
				t.Errorf("%s depends on %s (state costs and relations with package privacy; only the curator and the job manager touch the ledger)", pkg, f)
			}
		}
	}
}
