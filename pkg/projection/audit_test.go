package projection_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/privbo/privbo/internal/testrace"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/dptest"
	"github.com/privbo/privbo/pkg/projection"
)

// An empirical privacy audit of the curator's projection release, end to end:
// two neighbouring CSV files go through the real loader and scaling, then through
// ProjectGaussian many times each, and a threshold test tries to tell them apart.
// Any test that distinguishes them bounds the privacy loss from below: for an
// (ε, δ)-DP release, TPR ≤ e^ε·FPR + δ for every test (Kairouz, Oh & Viswanath
// 2015), so
//
//	ε ≥ ln((TPR − δ) / FPR),
//
// and with Clopper–Pearson bounds (TPR from below, FPR from above, each at
// confidence 1 − α/2) the bound holds with probability ≥ 1 − α (Jagielski, Ullman
// & Oprea 2020, "Auditing differentially private machine learning"). The audit
// makes the test as sharp as it can: one row changes by exactly one protected unit
// along a direction v, the projection matrix is fixed to M = v (r = 1, so
// ‖M‖₂ = 1 and the change moves the noise-free release by exactly the calibrated
// sensitivity), and the statistic is the release projected on the direction in
// which the two noise-free releases differ.
//
// On every scaling that claims the guarantee the lower bound must stay below the
// claimed ε; on the data-dependent scaling it must exceed it, which shows that
// the audit has the power to catch a broken guarantee. Randomness is seeded
// (dptest), so the outcome is deterministic.

const (
	auditEpsilon  = 1.0
	auditDelta    = 1e-5
	auditRows     = 442  // every row of the shipped diabetes data
	auditReleases = 2000 // per side; PRIVBO_AUDIT_RELEASES sets another count
	auditAlpha    = 0.05 // the lower bound holds with probability ≥ 95%
)

// auditCase is one scaling under audit: how to load the neighbours.
type auditCase struct {
	name    string
	private bool // the scaling claims the guarantee
	// load returns the scaled dataset of a CSV text.
	load func(t *testing.T, csv string) *dataset.Dataset
	// perUnit returns, for the dataset loaded from the original CSV, the raw
	// change of column j that moves the scaled value by one unit.
	perUnit func(ds *dataset.Dataset, j int) float64
}

func TestAuditGaussianProjection(t *testing.T) {
	testrace.Statistical(t)
	releases := auditReleases
	if v := os.Getenv("PRIVBO_AUDIT_RELEASES"); v != "" {
		if _, err := fmt.Sscan(v, &releases); err != nil || releases < 100 {
			t.Fatalf("PRIVBO_AUDIT_RELEASES=%q: want a count ≥ 100", v)
		}
	}
	raw := auditCSV(t)
	for _, c := range auditCases(t) {
		t.Run(c.name, func(t *testing.T) {
			res := runAudit(t, raw, c, releases)
			t.Logf("%s: noise-free shift %.4g σ (calibrated sensitivity %.4g σ); TPR %d/%d, FPR %d/%d; ε lower bound %.3f (claimed %g)",
				c.name, res.shift/res.sigma, res.sens/res.sigma, res.tp, releases, res.fp, releases, res.epsLB, auditEpsilon)
			if c.private && res.epsLB > auditEpsilon {
				t.Errorf("%s claims (%g, %g)-DP but the audit shows ε ≥ %.3f with 95%% confidence", c.name, auditEpsilon, auditDelta, res.epsLB)
			}
			if !c.private && res.epsLB <= auditEpsilon {
				t.Errorf("%s: the audit could not show that the data-dependent scaling breaks the claim (ε ≥ %.3f only): the audit has lost its power", c.name, res.epsLB)
			}
		})
	}
}

type auditResult struct {
	shift, sens, sigma float64
	tp, fp             int
	epsLB              float64
}

// runAudit loads the original and the neighbour, releases each `releases`
// times and returns the ε lower bound.
func runAudit(t *testing.T, raw [][]string, c auditCase, releases int) auditResult {
	t.Helper()
	ds := c.load(t, joinCSV(raw))
	d := ds.D
	// The row to change, moved by one unit away from the column means. On the
	// data-dependent scaling: the most atypical patient (farthest from the
	// means), where its statistics move most. On a private scaling: the most
	// typical one, whose change no bound or clip absorbs, so that the
	// noise-free release moves by the full calibrated sensitivity.
	i, v := chosenRow(ds, !c.private)
	changed := cloneCSV(raw)
	for j := range d {
		col := columnIndex(t, raw[0], ds.Features[j])
		x := mustFloat(t, changed[1+i][col])
		changed[1+i][col] = fmt.Sprint(x + v[j]*c.perUnit(ds, j))
	}
	ds2 := c.load(t, joinCSV(changed))
	if ds2.N != ds.N || ds2.D != d {
		t.Fatalf("the neighbour has shape %d×%d, want %d×%d", ds2.N, ds2.D, ds.N, d)
	}

	// M (d×1) is the direction that the change moves most: the top right
	// singular vector of the difference of the centred scaled matrices. On a
	// scaling that keeps the change to one row of at most one unit this
	// difference has rank one and the shift equals the calibrated sensitivity.
	m := topRightSingular(t, centredDiff(ds.X, ds2.X, ds.N, d), ds.N, d)
	z0, z1 := centredTimes(ds.X, ds.N, d, m), centredTimes(ds2.X, ds.N, d, m)
	u := make([]float64, ds.N)
	var shift float64
	for k := range u {
		u[k] = z1[k] - z0[k]
		shift += u[k] * u[k]
	}
	shift = math.Sqrt(shift)
	if shift == 0 {
		t.Fatal("the change did not move the noise-free release")
	}
	for k := range u {
		u[k] /= shift
	}
	dot := func(a, b []float64) (s float64) {
		for k := range a {
			s += a[k] * b[k]
		}
		return s
	}
	base := dot(z0, u)

	params := projection.Params{R: 1, Epsilon: auditEpsilon, Delta: auditDelta}
	release := func(x []float64, seed uint64) (float64, float64) {
		z, rep, err := projection.ProjectGaussian(context.Background(), x, ds.N, d, params,
			projection.FixedSource(m), func(part int) *dp.Source { return dptest.Source(seed<<8 | uint64(part)) })
		if err != nil {
			t.Fatal(err)
		}
		return dot(z, u) - base, rep.NoiseSD
	}
	// The threshold is fixed before looking at any release: three noise standard
	// deviations above the original's mean (false positive rate ≈ 0.13%).
	_, sigma := release(ds.X, 1)
	thr := 3 * sigma
	var tp, fp int
	for k := range releases {
		if s, _ := release(ds.X, uint64(2*k+2)); s > thr {
			fp++
		}
		if s, _ := release(ds2.X, uint64(2*k+3)); s > thr {
			tp++
		}
	}
	sens := math.Sqrt(1 - 1/float64(ds.N)) // ‖M‖₂ = 1, r = 1
	if c.private && math.Abs(shift-sens) > 1e-6*sens {
		t.Errorf("%s: the change moved the noise-free release by %.9g, want exactly the sensitivity %.9g: the audit is not sharp", c.name, shift, sens)
	}
	return auditResult{shift: shift, sens: sens, sigma: sigma, tp: tp, fp: fp,
		epsLB: epsilonLowerBound(tp, fp, releases, auditDelta, auditAlpha)}
}

// epsilonLowerBound returns ln((TPR_lo − δ)/FPR_hi) with Clopper–Pearson bounds at
// confidence 1 − α/2 each (0 when the bound is not positive).
func epsilonLowerBound(tp, fp, n int, delta, alpha float64) float64 {
	tprLo := 0.0
	if tp > 0 {
		tprLo = distuv.Beta{Alpha: float64(tp), Beta: float64(n - tp + 1)}.Quantile(alpha / 2)
	}
	fprHi := 1.0
	if fp < n {
		fprHi = distuv.Beta{Alpha: float64(fp + 1), Beta: float64(n - fp)}.Quantile(1 - alpha/2)
	}
	if tprLo-delta <= 0 {
		return 0
	}
	return math.Max(0, math.Log((tprLo-delta)/fprHi))
}

func TestEpsilonLowerBound(t *testing.T) {
	// With no false positives and every true positive among 10,000, the bound is
	// ln(TPR_lo/FPR_hi) with FPR_hi = 1 − (α/2)^(1/n) (Clopper–Pearson at 0).
	n := 10000
	fprHi := 1 - math.Pow(0.025, 1/float64(n))
	tprLo := math.Pow(0.025, 1/float64(n))
	want := math.Log((tprLo - 1e-5) / fprHi)
	if got := epsilonLowerBound(n, 0, n, 1e-5, 0.05); math.Abs(got-want) > 1e-9*want {
		t.Errorf("bound at the extremes = %v, want %v", got, want)
	}
	// Indistinguishable sides give no evidence.
	if got := epsilonLowerBound(500, 500, n, 1e-5, 0.05); got != 0 {
		t.Errorf("equal rates give ε ≥ %v, want 0", got)
	}
}

// chosenRow returns the index of the scaled row farthest from the column means
// (or nearest to them when !farthest) and the unit vector from the means
// towards it.
func chosenRow(ds *dataset.Dataset, farthest bool) (int, []float64) {
	mean := make([]float64, ds.D)
	for i := range ds.N {
		for j, x := range ds.Row(i) {
			mean[j] += x / float64(ds.N)
		}
	}
	best, bestNorm := -1, 0.0
	for i := range ds.N {
		var s float64
		for j, x := range ds.Row(i) {
			s += (x - mean[j]) * (x - mean[j])
		}
		if best < 0 || (farthest && s > bestNorm) || (!farthest && s < bestNorm) {
			best, bestNorm = i, s
		}
	}
	// Away from the means, leaving out columns in which the row holds the
	// column's extreme value (such as a two-valued sex column): a schema bound may
	// sit there and absorb the change.
	lo := append([]float64(nil), ds.Row(0)...)
	hi := append([]float64(nil), ds.Row(0)...)
	for i := range ds.N {
		for j, x := range ds.Row(i) {
			lo[j], hi[j] = math.Min(lo[j], x), math.Max(hi[j], x)
		}
	}
	v := make([]float64, ds.D)
	var norm float64
	for j, x := range ds.Row(best) {
		if farthest || (x > lo[j] && x < hi[j]) {
			v[j] = x - mean[j]
			norm += v[j] * v[j]
		}
	}
	for j := range v {
		v[j] /= math.Sqrt(norm)
	}
	return best, v
}

// centredDiff returns centred(b) − centred(a) for row-major n×d matrices.
func centredDiff(a, b []float64, n, d int) []float64 {
	out := make([]float64, n*d)
	for j := range d {
		var ma, mb float64
		for i := range n {
			ma += a[i*d+j] / float64(n)
			mb += b[i*d+j] / float64(n)
		}
		for i := range n {
			out[i*d+j] = (b[i*d+j] - mb) - (a[i*d+j] - ma)
		}
	}
	return out
}

// topRightSingular returns the unit right singular vector of the largest
// singular value of the row-major n×d matrix a.
func topRightSingular(t *testing.T, a []float64, n, d int) []float64 {
	t.Helper()
	var svd mat.SVD
	if !svd.Factorize(mat.NewDense(n, d, a), mat.SVDThin) {
		t.Fatal("SVD did not converge")
	}
	var v mat.Dense
	svd.VTo(&v)
	return mat.Col(nil, 0, &v)
}

// centredTimes returns (X − 1 meanᵀ) v for the row-major n×d matrix x.
func centredTimes(x []float64, n, d int, v []float64) []float64 {
	mean := make([]float64, d)
	for i := range n {
		for j := range d {
			mean[j] += x[i*d+j] / float64(n)
		}
	}
	z := make([]float64, n)
	for i := range n {
		for j := range d {
			z[i] += (x[i*d+j] - mean[j]) * v[j]
		}
	}
	return z
}

func auditCSV(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile("../../examples/data/diabetes.csv")
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for line := range strings.Lines(strings.ReplaceAll(string(b), "\r", "")) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		rows = append(rows, strings.Split(line, ","))
		if len(rows) == auditRows+1 {
			break
		}
	}
	return rows
}

func joinCSV(rows [][]string) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(strings.Join(r, ","))
		b.WriteByte('\n')
	}
	return b.String()
}

func cloneCSV(rows [][]string) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = append([]string(nil), r...)
	}
	return out
}

func columnIndex(t *testing.T, header []string, name string) int {
	t.Helper()
	for k, h := range header {
		if h == name {
			return k
		}
	}
	t.Fatalf("no column %q", name)
	return -1
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	var x float64
	if _, err := fmt.Sscan(s, &x); err != nil {
		t.Fatal(err)
	}
	return x
}
