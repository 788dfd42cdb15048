package integration

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/devca"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// pythonClientDir is the Python client (clients/python/README.md).
var pythonClientDir = filepath.Join("..", "clients", "python")

// findPython returns a Python 3 that imports grpc and google.protobuf — Debian's
// /usr/bin/python3, for which `make deps` (scripts/install-deps.sh) installs
// python3-grpcio and python3-protobuf, else a python3 on PATH — or "" and what each
// candidate lacked.
func findPython() (string, string) {
	var why []string
	for _, name := range []string{"/usr/bin/python3", "python3"} {
		p, err := exec.LookPath(name)
		if err != nil {
			why = append(why, name+": not found")
			continue
		}
		out, err := exec.Command(p, "-c", "import grpc, google.protobuf").CombinedOutput()
		if err != nil {
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			why = append(why, p+": "+lines[len(lines)-1])
			continue
		}
		return p, ""
	}
	return "", strings.Join(why, "; ")
}

// Settings of the plaintext curator the Python tests' DevCuratorTest expects.
const (
	pyBudgetEpsilon = 3.0
	pyOutputEpsilon = 0.5
)

// TestPythonClient starts two real curator processes on loopback — a plaintext
// development one over the diabetes data with private answers, and a TLS one over the
// breast-cancer data with tokens, client certificates, jobs and a rate limit — and runs
// the Python client's unit tests (clients/python/tests) against them: release and
// checksum, queries, budgets, jobs, rate-limit retries, and refusals by the budget that
// the Python side must see as privbo.BudgetExhausted. Then it runs the example study and
// checks with the Go client that the curator charged what the example reports and that
// the example's matrix is the one the curator released. Without a Python that has
// grpcio and protobuf it skips, saying how to install them.
func TestPythonClient(t *testing.T) {
	python, why := findPython()
	if python == "" {
		t.Skipf("no Python 3 with grpcio and protobuf (%s): `make deps` (scripts/install-deps.sh) installs Debian's python3-grpcio, python3-protobuf and python3-numpy, with which this test runs the Python client", why)
	}
	t.Logf("running the Python client with %s", python)
	bin := buildBinary(t, "./cmd/curator")

	dev := startRealCurator(t, bin, "--data", diabetesPath, "--target", "progression", "--dataset-id", "diabetes",
		"--schema", diabetesSchema, "--state", t.TempDir(),
		"--budget-epsilon", fmt.Sprint(pyBudgetEpsilon), "--budget-delta", "1e-3",
		"--dataset-budget-epsilon", "1000", "--dataset-budget-delta", "0.5",
		"--output-privacy", "laplace", "--output-epsilon", fmt.Sprint(pyOutputEpsilon))
	t.Cleanup(dev.kill)

	pki := t.TempDir()
	const certIdentity = "py-cert-vendor"
	if err := devca.Create(pki, []string{"127.0.0.1", "localhost"}, []string{certIdentity}, time.Hour); err != nil {
		t.Fatal(err)
	}
	const token, tokenIdentity = "tok-py-5e1f0c2d9b8a7f6e5d4c3b2a1908f7e6", "py-token-vendor"
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte(tokenIdentity+" "+transport.HashToken(token)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secure := startRealCurator(t, bin, "--data", breastCancerPath, "--target", "benign", "--dataset-id", "breast-cancer",
		"--schema", filepath.Join("..", "examples", "data", "breast_cancer.schema.csv"), "--state", t.TempDir(),
		"--budget-epsilon", "10", "--budget-delta", "0.01", "--output-privacy", "laplace",
		"--jobs", "--kusner-k1", "0.5",
		"--tls-cert", filepath.Join(pki, devca.ServerFile), "--tls-key", filepath.Join(pki, devca.ServerKeyFile),
		"--client-ca", filepath.Join(pki, devca.CAFile), "--tokens", tokens,
		"--rate-limit", "20", "--rate-burst", "2")
	t.Cleanup(secure.kill)

	cert, key := devca.ClientFiles(certIdentity)
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	env := append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1",
		"PRIVBO_TEST_CURATOR="+dev.addr,
		"PRIVBO_TEST_BUDGET_EPSILON="+fmt.Sprint(pyBudgetEpsilon),
		"PRIVBO_TEST_OUTPUT_EPSILON="+fmt.Sprint(pyOutputEpsilon),
		"PRIVBO_TEST_TLS_CURATOR="+secure.addr,
		"PRIVBO_TEST_CA="+abs(filepath.Join(pki, devca.CAFile)),
		"PRIVBO_TEST_TOKEN="+token, "PRIVBO_TEST_TOKEN_IDENTITY="+tokenIdentity,
		"PRIVBO_TEST_CERT="+abs(filepath.Join(pki, cert)), "PRIVBO_TEST_KEY="+abs(filepath.Join(pki, key)),
		"PRIVBO_TEST_CERT_IDENTITY="+certIdentity)
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, python, args...)
		cmd.Dir = pythonClientDir
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	t.Run("unittest", func(t *testing.T) {
		out, err := run("-m", "unittest", "discover", "-s", "tests", "-v")
		if err != nil {
			t.Fatalf("python tests failed: %v\n%s", err, out)
		}
		t.Logf("python tests:\n%s", out)
		// The tests against the curators ran (none skipped for want of one).
		for _, name := range []string{
			"test_release_checksum_query_budget", "test_over_budget_release_refused_with_typed_error",
			"test_study_that_cannot_pay_its_answers_refused", "test_r_above_d_refused_by_the_curator", "test_quote_of_the_default_study",
			"test_bad_request_is_invalid_argument", "test_token_identity_and_rate_limit",
			"test_client_certificate_identity", "test_no_credentials_unauthenticated",
			"test_jobs_submit_poll_cancel_and_refusal",
		} {
			if !regexp.MustCompile(`(?m)^` + name + ` \(.*\) \.\.\. ok$`).MatchString(out) {
				t.Errorf("python test %s did not run and pass", name)
			}
		}
	})

	t.Run("example", func(t *testing.T) {
		const identity = "py-example"
		out, err := run(filepath.Join("examples", "study.py"), dev.addr, identity)
		if err != nil {
			t.Fatalf("examples/study.py failed: %v\n%s", err, out)
		}
		t.Logf("examples/study.py:\n%s", out)
		m := regexp.MustCompile(`projection (\S+): 442 x 3, sha256 ([0-9a-f]{64})`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("the example printed no projection line")
		}
		if !regexp.MustCompile(`best of rows \[\d+(, \d+){4}\]: row \d+ \(`).MatchString(out) {
			t.Errorf("the example printed no answer line")
		}
		want := fmt.Sprintf("budget of %s: epsilon spent %g of %g", identity, 1+pyOutputEpsilon, pyBudgetEpsilon)
		if !strings.Contains(out, want) {
			t.Errorf("the example did not print %q", want)
		}

		// The curator's view, through the Go client: the same charge, and the same
		// matrix, replayed at no cost.
		client := curatorv1.NewCuratorServiceClient(dial(t, dev.addr, identity))
		ctx := context.Background()
		b, err := client.GetBudget(ctx, &curatorv1.GetBudgetRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if got := b.GetBudget().GetEpsilonSpent(); math.Abs(got-(1+pyOutputEpsilon)) > 1e-9 {
			t.Errorf("curator charged %s ε = %g, want %g", identity, got, 1+pyOutputEpsilon)
		}
		p, err := curatorclient.FetchProjection(ctx, client, &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 1, Delta: 1e-6})
		if err != nil {
			t.Fatal(err)
		}
		if !p.Replayed || p.ReleaseID != m[1] {
			t.Errorf("Go fetch: release %s (replayed %v), want a replay of the example's %s", p.ReleaseID, p.Replayed, m[1])
		}
		buf := make([]byte, 8*len(p.Z))
		for i, v := range p.Z {
			binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(v))
		}
		if sum := sha256.Sum256(buf); hex.EncodeToString(sum[:]) != m[2] {
			t.Errorf("the example's matrix has SHA-256 %s, the curator's release %x", m[2], sum)
		}
	})
}
