package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// binDir holds the project's commands built for this test process; TestMain creates it
// and removes it at exit.
var binDir string

// built remembers each command's build, so that every test using it shares one binary.
var built struct {
	sync.Mutex
	path map[string]string
	err  map[string]error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "privbo-integration-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: creating the binaries' directory:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildBinary returns the path of one of the project's commands (pkg is "./cmd/name"),
// built into binDir as name the first time a test asks for it in this process and
// reused afterwards. A run of tests that needs no binary builds none.
func buildBinary(t testing.TB, pkg string) string {
	t.Helper()
	built.Lock()
	defer built.Unlock()
	if built.path == nil {
		built.path, built.err = map[string]string{}, map[string]error{}
	}
	if p, ok := built.path[pkg]; ok {
		return p
	}
	if err, ok := built.err[pkg]; ok {
		t.Fatal(err)
	}
	out := filepath.Join(binDir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = ".."
	if b, err := cmd.CombinedOutput(); err != nil {
		built.err[pkg] = fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		t.Fatal(built.err[pkg])
	}
	built.path[pkg] = out
	return out
}
