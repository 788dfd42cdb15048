package modeler

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The modeler's side works from what the curator states on the wire; it should not
// link the curator's mechanisms (pkg/dp), its projection (pkg/projection), its data
// handling (pkg/dataset) or its ledger (pkg/ledger) to recompute facts the curator
// knows (issue 23, "Facts on the wire"). remainingDeps lists what is still linked and
// why; the test fails when a new one appears and when one listed is gone (then delete
// its line).
var remainingDeps = map[string]map[string]string{
	"pkg/gpucb":   {},
	"pkg/modeler": {},
}

// forbiddenDeps are the module's packages the modeler's side should not link (each with
// everything beneath it).
var forbiddenDeps = []string{"pkg/dp", "pkg/projection", "pkg/dataset", "pkg/ledger"}

func TestModelerSideImports(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	const module = "github.com/privbo/privbo/"
	linked := func(pkg string) []string {
		out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", module+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		var found []string
		for _, d := range strings.Fields(string(out)) {
			for _, f := range forbiddenDeps {
				if d == module+f || strings.HasPrefix(d, module+f+"/") {
					found = append(found, f)
				}
			}
		}
		slices.Sort(found)
		return slices.Compact(found)
	}
	// The check must be able to see a dependency: the curator links all four.
	if got := linked("pkg/curator"); len(got) != len(forbiddenDeps) {
		t.Fatalf("pkg/curator links %v of %v: the check below would pass vacuously", got, forbiddenDeps)
	}
	for _, pkg := range []string{"pkg/gpucb", "pkg/modeler"} {
		found := linked(pkg)
		for _, f := range found {
			if _, ok := remainingDeps[pkg][f]; !ok {
				t.Errorf("%s links %s: the modeler's side takes the curator's facts from the wire, not from its packages", pkg, f)
			}
		}
		for f, why := range remainingDeps[pkg] {
			if !slices.Contains(found, f) {
				t.Errorf("%s no longer links %s (%s): delete its line from remainingDeps", pkg, f, why)
			}
		}
	}
}
