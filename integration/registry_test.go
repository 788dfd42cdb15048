package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/dataset"
)

// The registry table: a synthetic patient registry of n rows whose best row is known by
// construction, so that a study's recommendation can be judged by true values
// (docs/EXPERIMENTS.md, "A registry-sized study"). Eight numeric columns with the mess of
// real registries — right-skewed bmi, creatinine, hdl and hba1c (log-normal, creatinine
// with a kidney-disease tail), creatinine missing in 4% of rows and hba1c in 9% (empty
// cells), correlated blood pressures — and three categorical ones (sex, region, smoking):
// d = 20 features once the curator one-hot encodes them and adds the missing indicators,
// so that the default study's projection has r = 20.
//
// The target, response, is a score on [0, 100]:
//
//	response = clamp(80·exp(−Q/2) + s + e, 0, 100)
//	Q = ((age − 62)/10)² + (ln(bmi/26)/0.1)² + ((sbp − 120)/12)² + (ln(creatinine/80)/0.2)²
//
// with s = +4 for never-smokers, 0 for former and −4 for current smokers, and e normal
// with sd 3 truncated to [−9, 9] (so that response ≤ 84 + 9 = 93; it uses the true
// creatinine, also where the cell is missing). One row, chosen from the seed, is planted
// at the optimum (age 62, bmi 26, sbp 120, creatinine 80, never-smoker) with response 95:
// it is the unique best row, by construction.
const (
	registryBestValue  = 95 // the planted row's response
	registryOthersMost = 93 // every other row's response is at most this
)

// registryTruth is what the generator knows about the table it wrote.
type registryTruth struct {
	Rows, Seed int
	Best       int // the planted row (0-based, as the curator numbers rows)
}

// registryHeader is the CSV's header line.
const registryHeader = "age,sex,region,bmi,sbp,dbp,ldl,hdl,creatinine,hba1c,smoking,response\n"

// registrySchema is the table's public schema: bounds from what the columns mean, the
// public value of a missing cell with its indicator, log transforms for the skewed
// columns, the categories, and the target's range.
const registrySchema = `# Public schema of the synthetic registry (integration/registry_test.go).
column,lower,upper,missing,missing_indicator,categories,transform
age,18,100,,,,
sex,,,,,F|M,
region,,,,,capital|zealand|south|central|north,
bmi,12,70,,,,log
sbp,70,250,,,,
dbp,40,150,,,,
ldl,0.3,10,,,,
hdl,0.2,5,,,,log
creatinine,20,1500,85,yes,,log
hba1c,15,150,40,yes,,log
smoking,,,,,never|former|current,
response,0,100,,,,
`

var (
	registryRegions = []string{"capital", "zealand", "south", "central", "north"}
	registrySexes   = []string{"F", "M"}
	registrySmoking = []string{"never", "former", "current"}
	// registrySmokingEffect is s of each registrySmoking category.
	registrySmokingEffect = []float64{4, 0, -4}
)

// writeRegistry writes the n-row registry table of seed to w as CSV, one row at a time,
// and returns where its best row is.
func writeRegistry(w io.Writer, n, seed int) (registryTruth, error) {
	if n < 1 {
		return registryTruth{}, fmt.Errorf("registry: %d rows", n)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x7265676973747279)) // "registry"
	truth := registryTruth{Rows: n, Seed: seed, Best: rng.IntN(n)}
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString(registryHeader)
	clamp := func(v, lo, hi float64) float64 { return min(max(v, lo), hi) }
	logNormal := func(median, sdLog float64) float64 { return median * math.Exp(sdLog*rng.NormFloat64()) }
	num := func(b []byte, v float64, prec int) []byte {
		return append(strconv.AppendFloat(b, v, 'f', prec, 64), ',')
	}
	var b []byte
	for i := range n {
		age := math.Round(clamp(58+15*rng.NormFloat64(), 18, 100))
		sex := registrySexes[rng.IntN(2)]
		region := registryRegions[rng.IntN(len(registryRegions))]
		bmi := math.Round(10*clamp(logNormal(27, 0.18), 12, 70)) / 10
		zs := rng.NormFloat64()
		sbp := math.Round(clamp(130+18*zs, 70, 250))
		dbp := math.Round(clamp(80+11*(0.5*zs+0.87*rng.NormFloat64()), 40, 150))
		ldl := clamp(3.2+0.9*rng.NormFloat64(), 0.3, 10)
		hdl := clamp(logNormal(1.4, 0.25), 0.2, 5)
		creat := logNormal(85, 0.25)
		if rng.Float64() < 0.02 {
			creat *= 3 * math.Exp(0.5*rng.NormFloat64()) // chronic kidney disease
		}
		creat = math.Round(clamp(creat, 20, 1500))
		hba1c := math.Round(clamp(logNormal(38, 0.2), 15, 150))
		smoke := rng.IntN(len(registrySmoking))
		creatMissing, hba1cMissing := rng.Float64() < 0.04, rng.Float64() < 0.09
		e := clamp(3*rng.NormFloat64(), -9, 9)
		if i == truth.Best {
			age, bmi, sbp, creat, smoke, creatMissing, hba1cMissing = 62, 26, 120, 80, 0, false, false
		}
		q := sq((age-62)/10) + sq(math.Log(bmi/26)/0.1) + sq((sbp-120)/12) + sq(math.Log(creat/80)/0.2)
		y := clamp(80*math.Exp(-q/2)+registrySmokingEffect[smoke]+e, 0, 100)
		if i == truth.Best {
			y = registryBestValue
		}
		b = num(b[:0], age, 0)
		b = append(append(append(append(b, sex...), ','), region...), ',')
		b = num(num(num(num(num(b, bmi, 1), sbp, 0), dbp, 0), ldl, 2), hdl, 2)
		if !creatMissing {
			b = strconv.AppendFloat(b, creat, 'f', 0, 64)
		}
		b = append(b, ',')
		if !hba1cMissing {
			b = strconv.AppendFloat(b, hba1c, 'f', 0, 64)
		}
		b = append(b, ',')
		b = append(append(b, registrySmoking[smoke]...), ',')
		b = append(strconv.AppendFloat(b, y, 'f', 2, 64), '\n')
		if _, err := bw.Write(b); err != nil {
			return truth, fmt.Errorf("registry: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return truth, fmt.Errorf("registry: %w", err)
	}
	return truth, nil
}

func sq(x float64) float64 { return x * x }

// writeRegistryFiles writes dir/registry.csv, dir/registry.schema.csv and
// dir/registry.truth (key=value lines a shell reads: rows, seed, best_row, best_value,
// others_at_most).
func writeRegistryFiles(dir string, n, seed int) (registryTruth, error) {
	f, err := os.Create(filepath.Join(dir, "registry.csv"))
	if err != nil {
		return registryTruth{}, err
	}
	truth, err := writeRegistry(f, n, seed)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return truth, err
	}
	if err := os.WriteFile(filepath.Join(dir, "registry.schema.csv"), []byte(registrySchema), 0o644); err != nil {
		return truth, err
	}
	t := fmt.Sprintf("rows=%d\nseed=%d\nbest_row=%d\nbest_value=%d\nothers_at_most=%d\n",
		truth.Rows, truth.Seed, truth.Best, registryBestValue, registryOthersMost)
	return truth, os.WriteFile(filepath.Join(dir, "registry.truth"), []byte(t), 0o644)
}

// BenchmarkRegistryGenerate writes the registry table (registry.csv, its schema and
// registry.truth) into PRIVBO_REGISTRY_DIR (default: a temporary directory) and reports
// how fast: scripts/registry.sh generates its data with it.
//
//	PRIVBO_REGISTRY_ROWS  rows n [1000000]
//	PRIVBO_REGISTRY_SEED  seed [1]
//
// PRIVBO_REGISTRY_DIR=/tmp/reg PRIVBO_REGISTRY_ROWS=10000000 \
//
//	go test -run '^$' -bench '^BenchmarkRegistryGenerate$' -benchtime 1x ./integration
func BenchmarkRegistryGenerate(b *testing.B) {
	n, seed := envInt("PRIVBO_REGISTRY_ROWS", 1_000_000), envInt("PRIVBO_REGISTRY_SEED", 1)
	dir := os.Getenv("PRIVBO_REGISTRY_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	for b.Loop() {
		start := time.Now()
		if _, err := writeRegistryFiles(dir, n, seed); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "rows/s")
	}
	if st, err := os.Stat(filepath.Join(dir, "registry.csv")); err == nil {
		b.ReportMetric(float64(st.Size())/(1<<20), "CSV-MiB")
	}
}

// TestRegistryStudy runs scripts/registry.sh — generate, `curator serve`, a default
// `modeler run`, `curator results` — on a 10⁴-row registry table, after checking the
// table itself as the curator reads it: deterministic from its seed, the 20 features
// the schema makes of it, its share of missing cells, and its best row where the
// generator says, with every other row at most registryOthersMost. The script's
// judgement of the recommendation must agree with the data file.
func TestRegistryStudy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both binaries and runs a study")
	}
	const n, seed = 10_000, 7
	var a, b bytes.Buffer
	if _, err := writeRegistry(&a, 1000, seed); err != nil {
		t.Fatal(err)
	}
	if _, err := writeRegistry(&b, 1000, seed); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("two registry tables of one seed differ (err %v)", err)
	}
	b.Reset()
	if _, err := writeRegistry(&b, 1000, seed+1); err != nil || bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("the registry tables of two seeds are equal (err %v)", err)
	}

	dir := t.TempDir()
	truth, err := writeRegistryFiles(dir, n, seed)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := dataset.ParseScaling("schema:" + filepath.Join(dir, "registry.schema.csv"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.LoadCSV(filepath.Join(dir, "registry.csv"), dataset.Options{Target: "response", Scaling: sc})
	if err != nil {
		t.Fatal(err)
	}
	if ds.N != n || ds.D != 20 {
		t.Fatalf("the registry table loads as %d rows × %d features, want %d × 20", ds.N, ds.D, n)
	}
	for _, c := range []struct {
		feature  string
		min, max float64 // share of rows with a 1
	}{{"creatinine=missing", 0.03, 0.05}, {"hba1c=missing", 0.075, 0.105}, {"smoking=never", 0.3, 0.37}} {
		j := slices.Index(ds.Features, c.feature)
		if j < 0 {
			t.Fatalf("no feature %s among %v", c.feature, ds.Features)
		}
		ones := 0
		for i := range n {
			if ds.Row(i)[j] > 0 {
				ones++
			}
		}
		if f := float64(ones) / n; f < c.min || f > c.max {
			t.Errorf("%s is 1 in %.4g of rows, want [%g, %g]", c.feature, f, c.min, c.max)
		}
	}
	for i, y := range ds.Y {
		if i == truth.Best && y != registryBestValue || i != truth.Best && y > registryOthersMost {
			t.Fatalf("row %d: response %g; the generator says row %d has %d and every other at most %d", i, y, truth.Best, registryBestValue, registryOthersMost)
		}
	}

	bin := filepath.Dir(buildBinary(t, "./cmd/curator"))
	if got := filepath.Dir(buildBinary(t, "./cmd/modeler")); got != bin {
		t.Fatalf("curator and modeler built into %s and %s; scripts/registry.sh wants one directory", bin, got)
	}
	cmd := exec.Command("bash", "scripts/registry.sh", strconv.Itoa(n))
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "PRIVBO_BIN="+bin, "PRIVBO_REGISTRY_DATA="+dir)
	raw, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/registry.sh: %v\n%s", err, raw)
	}
	out := string(raw)
	for _, re := range []string{
		`(?m)^rows 10000, r 20, T 50$`,
		`(?m)^end to end \(curator start to the modeler's result\): [0-9.e+-]+ s$`,
		`(?m)^curator: load [0-9.e+-]+ s; release computed [0-9.e+-]+ s, streamed [0-9.e+-]+ s; peak RSS [0-9.e+-]+ GiB, CPU [0-9.e+-]+ s$`,
		`(?m)^modeler: 50 queries in [0-9.e+-]+ s .* peak RSS [0-9.e+-]+ GiB, CPU [0-9.e+-]+ s$`,
		fmt.Sprintf(`(?m)^known best row %d: response 95 \(every other row at most 93\); queried: (yes|no)$`, truth.Best),
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("scripts/registry.sh does not print %s:\n%s", re, out)
		}
	}
	m := regexp.MustCompile(`(?m)^recommended row (\d+): true response (\S+), rank (\d+) of 10000, percentile ([0-9.]+)%, top 1%: (yes|no)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("scripts/registry.sh does not judge the recommended row:\n%s", out)
	}
	i, _ := strconv.Atoi(m[1])
	if i < 0 || i >= n {
		t.Fatalf("recommended row %d of %d", i, n)
	}
	better := 0
	for _, y := range ds.Y {
		if y > ds.Y[i] {
			better++
		}
	}
	pct := strconv.FormatFloat(100*float64(n-better)/n, 'f', 1, 64)
	top := map[bool]string{true: "yes", false: "no"}[ds.Y[i] >= topOnePercentThreshold(ds.Y)]
	if m[2] != strconv.FormatFloat(ds.Y[i], 'g', -1, 64) || m[3] != strconv.Itoa(1+better) || m[4] != pct || m[5] != top {
		t.Errorf("recommended row %d: true response %s, rank %s, percentile %s%%, top 1%% %s; the data file says %g, rank %d, %s%%, %s",
			i, m[2], m[3], m[4], m[5], ds.Y[i], 1+better, pct, top)
	}
}
