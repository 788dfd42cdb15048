// Package deploy_test checks the deployment files against the binaries: no container
// engine runs in CI, so this is what keeps a renamed flag or a moved file from silently
// breaking a hospital's deployment.
package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// flagsOf builds cmd and returns the flags its subcommands print in their -h usage.
func flagsOf(t *testing.T, cmd string, subcommands ...string) map[string]bool {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(cmd))
	build := exec.Command("go", "build", "-o", bin, "./"+cmd)
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", cmd, err, out)
	}
	flags := map[string]bool{}
	re := regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`)
	for _, sub := range subcommands {
		out, _ := exec.Command(bin, sub, "-h").CombinedOutput() // -h exits non-zero
		found := re.FindAllStringSubmatch(string(out), -1)
		if len(found) == 0 {
			t.Fatalf("%s %s -h printed no flags:\n%s", cmd, sub, out)
		}
		for _, m := range found {
			flags[m[1]] = true
		}
	}
	return flags
}

var flagRe = regexp.MustCompile(`(?:^|[\s"'\[,])--([a-z][a-z0-9-]*)`)

func TestDeployFilesUseRealFlagsAndPaths(t *testing.T) {
	curator := flagsOf(t, "cmd/curator", "serve", "ledger", "check-config", "dev-ca", "hash-token")
	modeler := flagsOf(t, "cmd/modeler", "run")
	files := []string{"systemd/privbo-curator.service", "container/Dockerfile", "compose/compose.yaml", "compose/replicas.yaml", "k8s/curator.yaml", "../scripts/demo.sh"}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			for _, m := range flagRe.FindAllStringSubmatch(line, -1) {
				name := m[1]
				if name == "build" || name == "from" { // docker's own options
					continue
				}
				checked++
				if !curator[name] && !modeler[name] {
					t.Errorf("%s:%d uses --%s, which neither curator nor modeler has", f, n+1, name)
				}
			}
		}
	}
	if checked < 40 {
		t.Errorf("checked only %d flag uses; the scan is not seeing the files", checked)
	}
	// Paths the container build copies from the repository must exist.
	docker, _ := os.ReadFile("container/Dockerfile")
	for _, m := range regexp.MustCompile(`(?m)^COPY (?:--from=\S+ )?(\S+)`).FindAllStringSubmatch(string(docker), -1) {
		src := m[1]
		if strings.HasPrefix(src, "/") {
			continue // from the build stage
		}
		if _, err := os.Stat(filepath.Join("..", src)); err != nil {
			t.Errorf("Dockerfile copies %s, which is not in the repository", src)
		}
	}
	// Every curator started by these files names its dataset id (the ledger keys budgets
	// by it) and a public schema (public bounds, and the target's range for the private
	// answers), and none uses a data-dependent scaling, which voids the guarantee.
	for _, f := range []string{"systemd/privbo-curator.service", "compose/compose.yaml", "compose/replicas.yaml", "k8s/curator.yaml", "../scripts/demo.sh"} {
		b, _ := os.ReadFile(f)
		for _, want := range []string{"--dataset-id", "--schema"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s starts a curator without %s", f, want)
			}
		}
		if strings.Contains(string(b), "nonprivate") {
			t.Errorf("%s starts a curator with a data-dependent (nonprivate) scaling", f)
		}
	}
	// Schemas the image and the demo use must be in the repository, with a target line.
	for f, prefix := range map[string]string{"compose/compose.yaml": "/usr/share/privbo/examples/", "compose/replicas.yaml": "/usr/share/privbo/examples/", "../scripts/demo.sh": "examples/data/"} {
		b, _ := os.ReadFile(f)
		m := regexp.MustCompile(`--schema[= ]` + regexp.QuoteMeta(prefix) + `(\S+\.schema\.csv)`).FindStringSubmatch(string(b))
		if m == nil {
			t.Errorf("%s names no schema under %s", f, prefix)
			continue
		}
		s, err := os.ReadFile(filepath.Join("..", "examples", "data", m[1]))
		if err != nil {
			t.Errorf("%s uses the schema %s, which is not in examples/data: %v", f, m[1], err)
		} else if !regexp.MustCompile(`(?m)^progression,`).Match(s) {
			t.Errorf("schema %s gives no range for the target progression", m[1])
		}
	}
	// The environment variable k8s uses must be one the curator reads.
	k8s, _ := os.ReadFile("k8s/curator.yaml")
	for _, m := range regexp.MustCompile(`PRIVBO_CURATOR_([A-Z_]+)`).FindAllStringSubmatch(string(k8s), -1) {
		if name := strings.ToLower(strings.ReplaceAll(m[1], "_", "-")); !curator[name] {
			t.Errorf("k8s sets %s, but the curator has no flag --%s", m[0], name)
		}
	}
}

// TestReplicasCompose checks the shape of compose/replicas.yaml that matters for the
// budget and the releases: the curators it balances share the PostgreSQL ledger, each
// has a state volume of its own (no shared disk), and the balancer sends connections to
// every one of them and to nothing else.
func TestReplicasCompose(t *testing.T) {
	b, err := os.ReadFile("compose/replicas.yaml")
	if err != nil {
		t.Fatal(err)
	}
	compose := string(b)
	if !strings.Contains(compose, "--ledger=postgres") || !strings.Contains(compose, "--ledger-dsn=") {
		t.Error("replicas.yaml does not put the curators on a PostgreSQL ledger")
	}
	// The replica services: "  curator-x:" followed by their volumes, up to the next service.
	svc := regexp.MustCompile(`(?m)^  (curator-[a-z0-9]+):\n((?:    .*\n|\s*\n)*)`)
	replicas := map[string]bool{}
	volumes := map[string]string{}
	for _, m := range svc.FindAllStringSubmatch(compose, -1) {
		replicas[m[1]] = true
		v := regexp.MustCompile(`- (\S+):/var/lib/privbo\b`).FindStringSubmatch(m[2])
		if v == nil {
			t.Errorf("replica %s mounts no volume of its own on /var/lib/privbo (--state)", m[1])
			continue
		}
		if other, ok := volumes[v[1]]; ok {
			t.Errorf("replicas %s and %s share the state volume %s; the test of issue 16 is that they need not", other, m[1], v[1])
		}
		volumes[v[1]] = m[1]
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(v[1]) + `:`).MatchString(compose) {
			t.Errorf("replica %s mounts the volume %s, which replicas.yaml does not declare", m[1], v[1])
		}
	}
	if len(replicas) < 2 {
		t.Fatalf("replicas.yaml runs %d curator replicas, want at least 2", len(replicas))
	}
	conf, err := os.ReadFile("compose/nginx-replicas.conf")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(compose, "./nginx-replicas.conf:/etc/nginx/nginx.conf") {
		t.Error("replicas.yaml does not mount nginx-replicas.conf as the balancer's configuration")
	}
	upstream := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*server (\S+):7070\b`).FindAllStringSubmatch(string(conf), -1) {
		upstream[m[1]] = true
		if !replicas[m[1]] {
			t.Errorf("nginx-replicas.conf balances onto %s, which is not a replica of replicas.yaml", m[1])
		}
	}
	for r := range replicas {
		if !upstream[r] {
			t.Errorf("nginx-replicas.conf does not balance onto the replica %s", r)
		}
	}
	if !strings.Contains(string(conf), "stream {") {
		t.Error("nginx-replicas.conf does not balance TCP (stream): a layer-7 proxy would terminate TLS and lose the client certificate")
	}
}

// deltaFlags are the curator's δ limits and the modeler's δ; a δ flag not listed here
// fails TestDeployDeltaRule, so that a new one is checked too.
var deltaFlags = map[string]bool{"budget-delta": true, "dataset-budget-delta": true, "patient-budget-delta": true,
	"patient-dataset-budget-delta": true, "study-delta": true, "delta": true}

// largestUnknownN is the largest dataset for which README's default δ budget (1e-6) is
// small against 1/n (pkg/config.DefaultBudgetDelta): what a file serving a hospital's
// own data, of a size it does not know, must assume.
const largestUnknownN = 1e5

// TestDeployDeltaRule checks README's δ rule in the files that start a curator and a
// modeler: every δ they set (and the default δ budget when they set none) is small
// against 1/n — at most 1/(10 n), with n the rows of the shipped example a file serves or
// largestUnknownN for a hospital's own data — and the modeler's δ fits the curator's δ
// budget in the same file, so the shipped study is not refused.
func TestDeployDeltaRule(t *testing.T) {
	kv := regexp.MustCompile(`(?:^|[\s"'\[,])--([a-z][a-z0-9-]*)[= ]([^\s"'\\,\]]+)`)
	for _, f := range []string{"systemd/privbo-curator.service", "compose/compose.yaml", "compose/replicas.yaml", "k8s/curator.yaml", "../scripts/demo.sh"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		deltas := map[string][]float64{}
		n := largestUnknownN
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			for _, m := range kv.FindAllStringSubmatch(line, -1) {
				name, val := m[1], m[2]
				if name == "data" && filepath.Base(val) == "diabetes.csv" {
					n = float64(exampleRows(t, "diabetes.csv"))
				}
				if !strings.HasSuffix(name, "delta") {
					continue
				}
				if !deltaFlags[name] {
					t.Errorf("%s sets --%s, a δ flag this test does not know", f, name)
				}
				d, err := strconv.ParseFloat(val, 64)
				if err != nil {
					t.Errorf("%s: --%s %q is not a number", f, name, val)
					continue
				}
				deltas[name] = append(deltas[name], d)
			}
		}
		budget := deltas["budget-delta"]
		if len(budget) == 0 {
			budget = []float64{1e-6} // README: "--budget-delta defaults to 1e-6"
		}
		for name, ds := range deltas {
			for _, d := range ds {
				if d*n > 0.1 {
					t.Errorf("%s: --%s %g is not small against 1/n = %.3g (n = %g): README's rule asks δ ≪ 1/n; at most %.3g", f, name, d, 1/n, n, 0.1/n)
				}
			}
		}
		for _, d := range deltas["delta"] {
			if d > slices.Min(budget) {
				t.Errorf("%s: the modeler's --delta %g exceeds the curator's --budget-delta %g: its study would be refused", f, d, slices.Min(budget))
			}
		}
	}
}

// exampleRows counts the data rows (lines after the header) of a shipped example.
func exampleRows(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", "data", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(strings.TrimSpace(string(b)), "\n")
}
