package integration

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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

// debianPython is the interpreter the Python client is installed for: Debian's, never a
// python3 that PATH may find first (a pyenv build, say), whose packages are not Debian's.
const debianPython = "/usr/bin/python3"

// pythonModules are the Debian packages' modules the package's install and tests need:
// python3-venv and python3-setuptools/python3-wheel (the build backend) besides the
// client's own dependencies and the study example's numpy and scikit-learn.
const pythonModules = "import venv, ensurepip, setuptools, wheel, grpc, google.protobuf, numpy, sklearn"

// pythonEnv is the environment of every Python command: no bytecode in the source tree,
// no user site-packages or pip configuration, no package index (pip installs from the
// source directory only, offline).
func pythonEnv(extra ...string) []string {
	env := append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONNOUSERSITE=1", "PIP_CONFIG_FILE=/dev/null",
		"PIP_NO_INDEX=1", "PIP_NO_CACHE_DIR=1", "PIP_DISABLE_PIP_VERSION_CHECK=1")
	return append(env, extra...)
}

// copyPythonSources copies the package's sources (pyproject.toml, README.md, privbo/)
// from clients/python to dst, leaving out bytecode and earlier builds' files.
func copyPythonSources(t *testing.T, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, top := range []string{"pyproject.toml", "README.md", "privbo"} {
		err := filepath.WalkDir(filepath.Join(pythonClientDir, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(pythonClientDir, path)
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "__pycache__" || strings.HasSuffix(d.Name(), ".egg-info") {
					return filepath.SkipDir
				}
				return os.MkdirAll(filepath.Join(dst, rel), 0o755)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
		})
		if err != nil {
			t.Fatalf("copy the Python client's sources: %v", err)
		}
	}
}

// installPythonClient installs the Python client as clients/python/README.md tells a user
// to — into a virtual environment of Debian's python3 that sees Debian's packages
// (--system-site-packages), with pip and no network (--no-build-isolation --no-deps) —
// from a copy of the package's sources, so that the build's files stay out of the
// repository. It returns the environment's interpreter, and checks that it imports the
// installed package (not the source tree) with its version, py.typed and declared
// dependencies.
func installPythonClient(t *testing.T) string {
	t.Helper()
	if out, err := exec.Command(debianPython, "-c", pythonModules).CombinedOutput(); err != nil {
		t.Fatalf("%s cannot install and test the Python client (%v: %s): `make deps` (scripts/install-deps.sh) installs Debian's python3-venv, python3-setuptools, python3-wheel, python3-grpcio, python3-protobuf, python3-numpy and python3-sklearn",
			debianPython, err, strings.TrimSpace(string(out)))
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	copyPythonSources(t, src)
	venv := filepath.Join(dir, "venv")
	python := filepath.Join(venv, "bin", "python")
	for _, args := range [][]string{
		{debianPython, "-m", "venv", "--system-site-packages", venv},
		{python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", src},
	} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = dir, pythonEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	cmd := exec.Command(python, "-c", `import importlib.metadata as md, pathlib, re, privbo
p = pathlib.Path(privbo.__file__).resolve().parent
print(p)
print(privbo.__version__, md.version("privbo"), (p / "py.typed").is_file(), (p / "_googleapis" / "LICENSE").is_file())
print(" ".join(sorted(re.match(r"[A-Za-z0-9_.-]+", r).group(0) for r in md.requires("privbo"))))`)
	cmd.Dir, cmd.Env = dir, pythonEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("import the installed privbo: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	venvAbs, _ := filepath.EvalSymlinks(venv)
	if len(lines) != 3 || !strings.HasPrefix(lines[0], venvAbs+string(filepath.Separator)) {
		t.Fatalf("the installed privbo: %q, want a package under %s", out, venvAbs)
	}
	if f := strings.Fields(lines[1]); len(f) != 4 || f[0] != f[1] || f[2] != "True" || f[3] != "True" {
		t.Errorf("installed privbo: version, metadata version, py.typed, googleapis licence = %q, want equal versions and both files", lines[1])
	}
	if want := "grpcio numpy numpy protobuf scikit-learn"; lines[2] != want {
		t.Errorf("installed privbo requires %q, want %q (grpcio and protobuf; numpy and scikit-learn as extras)", lines[2], want)
	}
	t.Logf("installed privbo %s into a virtual environment of %s at %s", strings.Fields(lines[1])[0], debianPython, venv)
	return python
}

// Settings of the plaintext curators the Python tests expect.
const (
	pyBudgetEpsilon = 3.0
	pyOutputEpsilon = 0.5
	pyExactRows     = 4 // the exact-answer curator's cap on distinct rows per identity
	pyIterations    = 8 // the example study's queries
)

// TestPythonClient installs the Python client as a user would (installPythonClient),
// starts four real curator processes on loopback — a plaintext development one over the
// diabetes data with private answers; a TLS one over the breast-cancer data with tokens,
// client certificates, jobs and a rate limit; one with exact answers capped at a few
// rows; one whose δ budget is 0 — and runs the Python client's tests
// (clients/python/tests) with the installed package against them: release and checksum,
// queries, budgets, jobs, rate-limit retries, and each refusal typed by its ErrorInfo
// reason. Then it runs the example GP-UCB study and checks with the Go client that the
// curator charged what the example reports, that the example's matrix is the one the
// curator released, that it printed the answers' noise the curator states, and that the
// row it recommends is one it queried.
func TestPythonClient(t *testing.T) {
	python := installPythonClient(t)
	bin := buildBinary(t, "./cmd/curator")

	dev := startRealCurator(t, bin, "--data", diabetesPath, "--target", "progression", "--dataset-id", "diabetes",
		"--schema", diabetesSchema, "--state", t.TempDir(),
		"--budget-epsilon", fmt.Sprint(pyBudgetEpsilon), "--budget-delta", "1e-3",
		"--dataset-budget-epsilon", "1000", "--dataset-budget-delta", "0.5",
		"--output-privacy", "laplace", "--output-epsilon", fmt.Sprint(pyOutputEpsilon))
	t.Cleanup(dev.kill)
	exact := startRealCurator(t, bin, "--data", diabetesPath, "--target", "progression", "--dataset-id", "diabetes",
		"--schema", diabetesSchema, "--state", t.TempDir(), "--budget-epsilon", "3", "--budget-delta", "1e-3",
		"--output-privacy", "none", "--exact-answers-max-rows", fmt.Sprint(pyExactRows))
	t.Cleanup(exact.kill)
	noDelta := startRealCurator(t, bin, "--data", diabetesPath, "--target", "progression", "--dataset-id", "diabetes",
		"--schema", diabetesSchema, "--state", t.TempDir(), "--budget-epsilon", "3", "--budget-delta", "0")
	t.Cleanup(noDelta.kill)

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
	env := pythonEnv(
		"PRIVBO_TEST_CURATOR="+dev.addr,
		"PRIVBO_TEST_BUDGET_EPSILON="+fmt.Sprint(pyBudgetEpsilon),
		"PRIVBO_TEST_OUTPUT_EPSILON="+fmt.Sprint(pyOutputEpsilon),
		"PRIVBO_TEST_TLS_CURATOR="+secure.addr,
		"PRIVBO_TEST_CA="+abs(filepath.Join(pki, devca.CAFile)),
		"PRIVBO_TEST_TOKEN="+token, "PRIVBO_TEST_TOKEN_IDENTITY="+tokenIdentity,
		"PRIVBO_TEST_CERT="+abs(filepath.Join(pki, cert)), "PRIVBO_TEST_KEY="+abs(filepath.Join(pki, key)),
		"PRIVBO_TEST_CERT_IDENTITY="+certIdentity,
		"PRIVBO_TEST_EXACT_CURATOR="+exact.addr, "PRIVBO_TEST_EXACT_ROWS="+fmt.Sprint(pyExactRows),
		"PRIVBO_TEST_NODELTA_CURATOR="+noDelta.addr)
	// Python runs in a directory of its own, so that it imports the installed package and
	// not clients/python/privbo.
	work := t.TempDir()
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, python, args...)
		cmd.Dir = work
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	t.Run("unittest", func(t *testing.T) {
		tests := abs(filepath.Join(pythonClientDir, "tests"))
		out, err := run("-m", "unittest", "discover", "-s", tests, "-t", tests, "-v")
		if err != nil {
			t.Fatalf("python tests failed: %v\n%s", err, out)
		}
		t.Logf("python tests:\n%s", out)
		// The tests against the curators ran (none skipped for want of one), one per
		// ErrorInfo reason among them.
		for _, name := range []string{
			"test_release_checksum_query_budget", "test_over_budget_release_refused_with_typed_error",
			"test_study_that_cannot_pay_its_answers_refused", "test_r_above_d_refused_by_the_curator", "test_quote_of_the_default_study",
			"test_bad_request_is_invalid_argument", "test_token_identity_and_rate_limit",
			"test_client_certificate_identity", "test_no_credentials_unauthenticated",
			"test_jobs_submit_poll_cancel_and_refusal", "test_exact_row_limit_reason", "test_delta_budget_zero_reason",
			"test_refusals_typed_by_their_error_info_reason", "test_no_error_text_is_read",
			"test_posterior_is_the_gp_closed_form", "test_loop_queries_distinct_rows_and_recommends_a_queried_one",
		} {
			if !regexp.MustCompile(`(?m)^` + name + ` \(.*\) \.\.\. ok$`).MatchString(out) {
				t.Errorf("python test %s did not run and pass", name)
			}
		}
		if strings.Contains(out, "skipped") {
			t.Errorf("python tests skipped some:\n%s", out)
		}
	})

	t.Run("example", func(t *testing.T) {
		const identity = "py-example"
		out, err := run(abs(filepath.Join(pythonClientDir, "examples", "study.py")), dev.addr, identity,
			"--iterations", fmt.Sprint(pyIterations))
		if err != nil {
			t.Fatalf("examples/study.py failed: %v\n%s", err, out)
		}
		t.Logf("examples/study.py:\n%s", out)
		m := regexp.MustCompile(`projection (\S+): 442 x 3, sha256 ([0-9a-f]{64}), noise sd (\S+) per entry`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("the example printed no projection line")
		}
		var queried []int
		for _, q := range regexp.MustCompile(`(?m)^query (\d+): row (\d+), noisy answer -?\d+\.\d$`).FindAllStringSubmatch(out, -1) {
			i, _ := strconv.Atoi(q[2])
			queried = append(queried, i)
		}
		if len(queried) != pyIterations || len(distinctInts(queried)) != pyIterations {
			t.Errorf("the example queried rows %v, want %d distinct rows", queried, pyIterations)
		}
		rec := regexp.MustCompile(`recommended row (\d+): posterior mean \S+ ± \S+ \(1 sd\), the highest posterior mean among the (\d+) queried rows`).FindStringSubmatch(out)
		if rec == nil {
			t.Fatalf("the example printed no recommendation")
		}
		recommended, _ := strconv.Atoi(rec[1])
		if !slices.Contains(queried, recommended) || rec[2] != fmt.Sprint(pyIterations) {
			t.Errorf("the example recommended row %d among %s queried rows, want one of %v", recommended, rec[2], queried)
		}
		if !regexp.MustCompile(`highest noisy answer: \S+ at row \d+ \(a noisy answer, not the row's value\)`).MatchString(out) {
			t.Errorf("the example did not print its highest answer as the noisy answer it is")
		}
		want := fmt.Sprintf("budget of %s: epsilon spent %g of %g", identity, 1+pyOutputEpsilon, pyBudgetEpsilon)
		if !strings.Contains(out, want) {
			t.Errorf("the example did not print %q", want)
		}

		// The curator's view, through the Go client: the same charge, the answers' noise
		// it states, the same matrix replayed at no cost, and the recommended row already
		// answered (a replay).
		client := curatorv1.NewCuratorServiceClient(dial(t, dev.addr, identity))
		ctx := context.Background()
		q, err := client.QuoteStudy(ctx, &curatorv1.QuoteStudyRequest{Dimension: 3, Epsilon: 1, Delta: 1e-6, WithAnswers: true})
		if err != nil {
			t.Fatal(err)
		}
		noise := regexp.MustCompile(`answers: laplace on \[0, 400\], noise sd (\S+) per answer`).FindStringSubmatch(out)
		if noise == nil {
			t.Errorf("the example did not print the answers' noise")
		} else if sd, _ := strconv.ParseFloat(noise[1], 64); math.Abs(sd-q.GetAnswers().GetNoiseSd()) > 1e-5*sd {
			t.Errorf("the example printed answer noise sd %s, the curator states %g", noise[1], q.GetAnswers().GetNoiseSd())
		}
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
		if sd, _ := strconv.ParseFloat(m[3], 64); math.Abs(sd-p.NoiseSD) > 1e-3*p.NoiseSD {
			t.Errorf("the example printed projection noise sd %s, the curator states %g", m[3], p.NoiseSD)
		}
		r, err := client.Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{uint64(recommended)}})
		if err != nil {
			t.Fatal(err)
		}
		if o := r.GetObservations(); len(o) != 1 || !o[0].GetReplayed() {
			t.Errorf("query of the recommended row %d: %v, want a replay of the example's answer", recommended, o)
		}
	})
}

// distinctInts is the set of xs.
func distinctInts(xs []int) map[int]bool {
	m := make(map[int]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}
