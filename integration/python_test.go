package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/devca"
	"github.com/privbo/privbo/pkg/modeler"
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
// client's own dependencies and privbo.Study's numpy.
const pythonModules = "import venv, ensurepip, setuptools, wheel, grpc, google.protobuf, numpy"

// pythonEnv is the environment of every Python command: home as HOME (the README's ~),
// no bytecode in the source tree, no user site-packages or pip configuration, no
// package index (pip installs from the source directory only, offline).
func pythonEnv(home string, extra ...string) []string {
	env := append(os.Environ(), "HOME="+home, "PYTHONDONTWRITEBYTECODE=1", "PYTHONNOUSERSITE=1", "PIP_CONFIG_FILE=/dev/null",
		"PIP_NO_INDEX=1", "PIP_NO_CACHE_DIR=1", "PIP_DISABLE_PIP_VERSION_CHECK=1")
	return append(env, extra...)
}

// readmeBlock is a fenced code block of clients/python/README.md: its language and text.
type readmeBlock struct{ lang, text string }

// readmeBlocks returns the README's sh and python blocks above its "## Reference"
// heading, in order: those the README says make test runs.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pythonClientDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text, _, ok := strings.Cut(string(b), "\n## Reference\n")
	if !ok {
		t.Fatal("clients/python/README.md has no \"## Reference\" heading")
	}
	var blocks []readmeBlock
	for _, m := range regexp.MustCompile("(?ms)^```(sh|python)\n(.*?)^```$").FindAllStringSubmatch(text, -1) {
		blocks = append(blocks, readmeBlock{m[1], m[2]})
	}
	return blocks
}

// treeFiles lists every file under dir (ignored ones included) with its size.
func treeFiles(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	files := map[string]int64{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			files[path] = info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// runBlock runs one README block from the repository's root with pythonEnv(home): an sh
// block with bash, a python block with the README's interpreter ~/privbo-venv/bin/python.
// 127.0.0.1:7070 becomes addr. The process group is killed when the test ends, so that a
// block's background process (the curator) ends with it.
func runBlock(t *testing.T, b readmeBlock, home, addr string) string {
	t.Helper()
	text := strings.ReplaceAll(b.text, "127.0.0.1:7070", addr)
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", text)
	if b.lang == "python" {
		cmd = exec.Command(filepath.Join(home, "privbo-venv", "bin", "python"), "-c", text)
	}
	cmd.Dir, cmd.Env = "..", pythonEnv(home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A file, not a pipe: Wait then returns when the block ends, not when the background
	// processes it started close their output.
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err = cmd.Wait()
	got, rerr := os.ReadFile(out.Name())
	if err != nil || rerr != nil {
		t.Fatalf("README block failed: %v %v\n%s\n%s", err, rerr, b.text, got)
	}
	return string(got)
}

// installPythonClient installs the Python client by running the README's first block
// (clients/python/README.md, "Install": pip in a virtual environment of Debian's python3
// that sees Debian's packages, offline) with home as HOME, and checks that it left
// nothing in clients/python, and that the environment imports the installed package
// (not the source tree) with its version, py.typed and declared dependencies. It
// returns the environment's interpreter.
func installPythonClient(t *testing.T, install readmeBlock, home string) string {
	t.Helper()
	if out, err := exec.Command(debianPython, "-c", pythonModules).CombinedOutput(); err != nil {
		t.Fatalf("%s cannot install and test the Python client (%v: %s): `make deps` (scripts/install-deps.sh) installs Debian's python3-venv, python3-setuptools, python3-wheel, python3-grpcio, python3-protobuf and python3-numpy",
			debianPython, err, strings.TrimSpace(string(out)))
	}
	if !strings.Contains(install.text, "pip install") {
		t.Fatalf("the README's first block installs nothing:\n%s", install.text)
	}
	before := treeFiles(t, pythonClientDir)
	runBlock(t, install, home, "")
	if after := treeFiles(t, pythonClientDir); !maps.Equal(before, after) {
		var left []string
		for f := range after {
			if _, ok := before[f]; !ok {
				left = append(left, f)
			}
		}
		slices.Sort(left)
		t.Errorf("installing the client changed clients/python: %d files before, %d after; new: %v", len(before), len(after), left[:min(len(left), 5)])
	}
	venv := filepath.Join(home, "privbo-venv")
	python := filepath.Join(venv, "bin", "python")
	cmd := exec.Command(python, "-c", `import importlib.metadata as md, pathlib, re, privbo
p = pathlib.Path(privbo.__file__).resolve().parent
print(p)
print(privbo.__version__, md.version("privbo"), (p / "py.typed").is_file(), (p / "_googleapis" / "LICENSE").is_file())
print(" ".join(sorted(re.match(r"[A-Za-z0-9_.-]+", r).group(0) for r in md.requires("privbo"))))`)
	cmd.Dir, cmd.Env = home, pythonEnv(home)
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
	if want := "grpcio numpy numpy protobuf"; lines[2] != want {
		t.Errorf("installed privbo requires %q, want %q (grpcio and protobuf; numpy as the extras numpy and study)", lines[2], want)
	}
	t.Logf("installed privbo %s into a virtual environment of %s at %s", strings.Fields(lines[1])[0], debianPython, venv)
	return python
}

// Settings of the plaintext curators the Python tests expect.
const (
	pyBudgetEpsilon = 3.0
	pyOutputEpsilon = 0.5
	pyExactRows     = 4 // the exact-answer curator's cap on distinct rows per identity
)

// TestPythonClient installs the Python client as its README says (installPythonClient),
// starts four real curator processes on loopback — a plaintext development one over the
// diabetes data with private answers; a TLS one over the breast-cancer data with tokens,
// client certificates, jobs and a rate limit; one with exact answers capped at a few
// rows; one whose δ budget is 0 — and runs the Python client's tests
// (clients/python/tests) with the installed package against them: release and checksum,
// queries, budgets, jobs, rate-limit retries, and each refusal typed by its ErrorInfo
// reason. Then it runs the README's other blocks in order (testReadme).
func TestPythonClient(t *testing.T) {
	blocks := readmeBlocks(t)
	if len(blocks) == 0 {
		t.Fatal("clients/python/README.md has no sh or python block above \"## Reference\"")
	}
	home := t.TempDir()
	python := installPythonClient(t, blocks[0], home)
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
	env := pythonEnv(home,
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
			"test_resume_repeats_no_query_and_asks_the_same_release", "test_resume_after_a_crash_keeps_every_answer",
		} {
			if !regexp.MustCompile(`(?m)^` + name + ` \(.*\) \.\.\. ok$`).MatchString(out) {
				t.Errorf("python test %s did not run and pass", name)
			}
		}
		if strings.Contains(out, "skipped") {
			t.Errorf("python tests skipped some:\n%s", out)
		}
	})

	t.Run("readme", func(t *testing.T) { testReadme(t, bin, home, blocks[1:]) })
}

// distinctInts is the set of xs.
func distinctInts(xs []int) map[int]bool {
	m := make(map[int]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// testReadme runs the README's blocks after the install in order, with home as HOME: the
// first starts the curator (bin in place of `go run ./cmd/curator`, on a port of its
// own), the others run against it. Then it checks the study they ran against its state
// file and the curator: every row asked once across the run and its resumption, the
// curator charged the identity one study, and the Go modeler (modeler.Run) on the same
// release, first row and iterations queries the same rows and recommends the same row
// with the same posterior mean.
func testReadme(t *testing.T, bin, home string, blocks []readmeBlock) {
	const goRun = "go run ./cmd/curator serve"
	if len(blocks) < 2 || !strings.Contains(blocks[0].text, goRun) || !strings.Contains(blocks[0].text, "--listen 127.0.0.1:7070") {
		t.Fatalf("the README's block after the install does not start a curator (%s … --listen 127.0.0.1:7070 &)", goRun)
	}
	addrFile := filepath.Join(t.TempDir(), "addr")
	start := strings.Replace(strings.Replace(blocks[0].text, "go run ./cmd/curator", bin, 1),
		"--listen 127.0.0.1:7070", "--listen 127.0.0.1:0 --addr-file "+addrFile, 1)
	runBlock(t, readmeBlock{"sh", start}, home, "")
	var addr string
	for deadline := time.Now().Add(20 * time.Second); addr == ""; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			addr = strings.TrimSpace(string(b))
		} else if time.Now().After(deadline) {
			t.Fatal("the README's curator did not start within 20 s")
		}
	}
	var out strings.Builder
	for _, b := range blocks[1:] {
		o := runBlock(t, b, home, addr)
		t.Logf("README %s block:\n%s\n%s", b.lang, b.text, o)
		out.WriteString(o)
	}
	m := regexp.MustCompile(`(?m)^New study in (\S+): `).FindStringSubmatch(out.String())
	if m == nil || !strings.Contains(out.String(), "Resuming the study in "+m[1]+": ") {
		t.Fatalf("the README's blocks neither started nor resumed a study:\n%s", out.String())
	}
	raw, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Settings struct {
			Iterations int     `json:"iterations"`
			Dimension  int     `json:"dimension"`
			Epsilon    float64 `json:"epsilon"`
			Delta      float64 `json:"delta"`
			InitialRow int     `json:"initial_row"`
		} `json:"settings"`
		Identity string `json:"identity"`
		Queried  []int  `json:"queried"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	it := st.Settings.Iterations
	asked := regexp.MustCompile(`(?m)^Query (\d+): row (\d+), answer \S+\.$`).FindAllStringSubmatch(out.String(), -1)
	var rows []int
	for _, q := range asked {
		i, _ := strconv.Atoi(q[2])
		rows = append(rows, i)
	}
	if !slices.Equal(rows, st.Queried) || len(distinctInts(rows)) != it {
		t.Errorf("the study and its resumption asked rows %v, stored %v: want %d distinct rows, each asked once", rows, st.Queried, it)
	}
	recs := regexp.MustCompile(`(?m)^Recommended row (\d+): posterior mean (\S+) ± \S+ \(1 sd\), the highest among the (\d+) queried rows\.\nHighest noisy answer: `).FindAllStringSubmatch(out.String(), -1)
	if len(recs) != 2 || recs[1][3] != fmt.Sprint(it) {
		t.Fatalf("the study printed recommendations %q, want two, the last after %d rows, each before the highest noisy answer", recs, it)
	}

	client := curatorv1.NewCuratorServiceClient(dial(t, addr, st.Identity))
	ctx := context.Background()
	spent := func() float64 {
		b, err := client.GetBudget(ctx, &curatorv1.GetBudgetRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return b.GetBudget().GetEpsilonSpent()
	}
	info, err := client.GetDatasetInfo(ctx, &curatorv1.GetDatasetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := st.Settings.Epsilon + info.GetOutputPrivacy().GetEpsilonPerIndex()
	if got := spent(); math.Abs(got-want) > 1e-9 {
		t.Errorf("the study's identity %s spent ε = %g, want one study's %g", st.Identity, got, want)
	}
	cfg := modeler.NewConfig()
	cfg.R, cfg.Epsilon, cfg.Delta, cfg.Iterations, cfg.InitialIndex = st.Settings.Dimension, st.Settings.Epsilon, st.Settings.Delta, it, st.Settings.InitialRow
	res, err := modeler.Run(ctx, curatorclient.New(client), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The same rows and row, and the mean as printed, to 4 significant digits.
	rec, _ := strconv.Atoi(recs[1][1])
	mean, _ := strconv.ParseFloat(recs[1][2], 64)
	if !slices.Equal(res.Queried, st.Queried) || res.Recommended != rec || math.Abs(res.RecommendedMean-mean) > 1e-3*math.Abs(mean) {
		t.Errorf("the Go modeler queried %v and recommends row %d (posterior mean %.4g); privbo.Study queried %v and recommends row %d (%s)",
			res.Queried, res.Recommended, res.RecommendedMean, st.Queried, rec, recs[1][2])
	}
	if got := spent(); math.Abs(got-want) > 1e-9 {
		t.Errorf("after the Go modeler's replay %s spent ε = %g, want still %g", st.Identity, got, want)
	}
}
