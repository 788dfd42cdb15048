package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The modeler runs at the hospital's partners, who install it beside their own
// tools: it must not carry the curator's database drivers, and its study logic
// (pkg/modeler, and pkg/simulate, which runs that logic against an in-process
// curator) must stay free of the wire, which only pkg/curatorclient speaks
// (docs/DESIGN.md, "Packages").
const (
	pgxModule  = "github.com/jackc/pgx"
	grpcModule = "google.golang.org/grpc"
	protoTree  = "github.com/privbo/privbo/proto"
)

// deps returns the import paths pkg links (go list -deps, test files excluded).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, msg)
	}
	return strings.Fields(string(out))
}

// under returns the paths of ds that are prefix or lie beneath it.
func under(ds []string, prefix string) []string {
	var out []string
	for _, d := range ds {
		if d == prefix || strings.HasPrefix(d, prefix+"/") {
			out = append(out, d)
		}
	}
	return out
}

func TestModelerDependencies(t *testing.T) {
	// The check itself must be able to see what it forbids: the curator's
	// PostgreSQL engine links pgx, and its server links gRPC and the protocol.
	if got := under(deps(t, "github.com/privbo/privbo/pkg/ledger/pgledger"), pgxModule); len(got) == 0 {
		t.Fatalf("go list finds no %s under pkg/ledger/pgledger: the check below would pass vacuously", pgxModule)
	}
	server := deps(t, "github.com/privbo/privbo/pkg/server")
	if len(under(server, grpcModule)) == 0 || len(under(server, protoTree)) == 0 {
		t.Fatalf("go list finds no %s or %s under pkg/server: the check below would pass vacuously", grpcModule, protoTree)
	}

	if got := under(deps(t, "github.com/privbo/privbo/cmd/modeler"), pgxModule); len(got) > 0 {
		t.Errorf("the modeler binary links the PostgreSQL driver: %v (keep pgx in pkg/ledger/pgledger, which only the curator imports)", got)
	}
	for _, pkg := range []string{"github.com/privbo/privbo/pkg/modeler", "github.com/privbo/privbo/pkg/simulate"} {
		ds := deps(t, pkg)
		for _, forbidden := range []string{grpcModule, protoTree} {
			if got := under(ds, forbidden); len(got) > 0 {
				t.Errorf("%s depends on %s: %v (only pkg/curatorclient speaks the wire)", pkg, forbidden, got)
			}
		}
	}
}
