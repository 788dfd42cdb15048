package simulate

import (
	"bufio"
	"cmp"
	"encoding/csv"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/privbo/privbo/pkg/dp/answer"
)

// CSVHeader is the header of the regret CSV.
var CSVHeader = []string{"method", "run", "iteration", "index", "value", "best", "regret"}

// Summary is the regret of one method across runs.
type Summary struct {
	Method string
	Runs   int
	// Mean and SE (standard error, sd/√Runs with sd's divisor Runs − 1) of the simple
	// regret per iteration t = 1..T (index t − 1).
	Mean, SE []float64
	// TopOne is the fraction of runs whose best noise-free value reaches the top 1% of
	// the objective (TopOnePercentThreshold) and TopOneSE its binomial standard error
	// sqrt(p(1 − p)/Runs); NaN until AddTopOne sets them.
	TopOne, TopOneSE float64
}

// TopOnePercentThreshold is the 99th percentile of f (linear interpolation between
// order statistics, numpy's default): the value a run must reach to be in the top 1%.
func TopOnePercentThreshold(f []float64) float64 {
	s := slices.Clone(f)
	slices.Sort(s)
	if len(s) == 0 {
		return math.NaN()
	}
	pos := 0.99 * float64(len(s)-1)
	lo := int(math.Floor(pos))
	if lo+1 >= len(s) {
		return s[lo]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

// AddTopOne sets TopOne and TopOneSE of each summary from rows: a run hits when its
// best value (the Best of its last row) is ≥ threshold(run).
func AddTopOne(sums []Summary, rows []Row, threshold func(run int) float64) {
	type key struct {
		method string
		run    int
	}
	best := map[key]float64{}
	last := map[key]int{}
	for _, r := range rows {
		k := key{r.Method, r.Run}
		if it, ok := last[k]; !ok || r.Iteration > it {
			last[k], best[k] = r.Iteration, r.Best
		}
	}
	for i := range sums {
		s := &sums[i]
		runs, hits := 0, 0
		for k, b := range best {
			if k.method != s.Method {
				continue
			}
			runs++
			if b >= threshold(k.run) {
				hits++
			}
		}
		s.TopOne, s.TopOneSE = math.NaN(), math.NaN()
		if runs > 0 {
			p := float64(hits) / float64(runs)
			s.TopOne, s.TopOneSE = p, math.Sqrt(p*(1-p)/float64(runs))
		}
	}
}

// Final returns the mean and standard error of the regret after the last iteration.
func (s Summary) Final() (mean, se float64) {
	if len(s.Mean) == 0 {
		return math.NaN(), math.NaN()
	}
	return s.Mean[len(s.Mean)-1], s.SE[len(s.SE)-1]
}

// Summarise computes the mean regret and its standard error per iteration for each
// method named in methods (in that order) from rows.
func Summarise(rows []Row, methods []string, iterations int) []Summary {
	type acc struct {
		runs      map[int]bool
		sum, sum2 []float64
		cnt       []int
	}
	accs := make(map[string]*acc, len(methods))
	for _, m := range methods {
		accs[m] = &acc{runs: map[int]bool{}, sum: make([]float64, iterations), sum2: make([]float64, iterations), cnt: make([]int, iterations)}
	}
	for _, r := range rows {
		a := accs[r.Method]
		if a == nil || r.Iteration < 1 || r.Iteration > iterations {
			continue
		}
		a.runs[r.Run] = true
		a.sum[r.Iteration-1] += r.Regret
		a.sum2[r.Iteration-1] += r.Regret * r.Regret
		a.cnt[r.Iteration-1]++
	}
	out := make([]Summary, 0, len(methods))
	for _, m := range methods {
		a := accs[m]
		s := Summary{Method: m, Runs: len(a.runs), Mean: make([]float64, iterations), SE: make([]float64, iterations), TopOne: math.NaN(), TopOneSE: math.NaN()}
		for t := range iterations {
			k := float64(a.cnt[t])
			if k == 0 {
				s.Mean[t], s.SE[t] = math.NaN(), math.NaN()
				continue
			}
			mean := a.sum[t] / k
			s.Mean[t] = mean
			if k > 1 {
				v := max(0, (a.sum2[t]-k*mean*mean)/(k-1))
				s.SE[t] = math.Sqrt(v / k)
			}
		}
		out = append(out, s)
	}
	return out
}

// WriteCSV writes rows with CSVHeader.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	for _, r := range rows {
		if err := cw.Write([]string{r.Method, strconv.Itoa(r.Run), strconv.Itoa(r.Iteration), strconv.Itoa(r.Index), f(r.Value), f(r.Best), f(r.Regret)}); err != nil {
			return fmt.Errorf("simulate: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	return nil
}

// meanErr adapts a Summary to plotter's XYer and YErrorer.
type meanErr Summary

func (m meanErr) Len() int                        { return len(m.Mean) }
func (m meanErr) XY(i int) (float64, float64)     { return float64(i + 1), m.Mean[i] }
func (m meanErr) YError(i int) (float64, float64) { return m.SE[i], m.SE[i] }

// WritePlot saves a PNG (or any format gonum/plot knows from the extension) of the mean
// simple regret per iteration with standard-error bars for each method.
func WritePlot(path, title string, sums []Summary) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "iteration t"
	p.Y.Label.Text = "mean simple regret (± standard error)"
	p.Legend.Top = true
	for k, s := range sums {
		me := meanErr(s)
		line, err := plotter.NewLine(me)
		if err != nil {
			return fmt.Errorf("simulate: plot %s: %w", s.Method, err)
		}
		c := plotutil.Color(k)
		line.Color = c
		line.Width = vg.Points(1.5)
		line.Dashes = plotutil.Dashes(k / 7)
		bars, err := plotter.NewYErrorBars(me)
		if err != nil {
			return fmt.Errorf("simulate: plot %s: %w", s.Method, err)
		}
		bars.Color = withAlpha(c, 0xa0)
		p.Add(line, bars)
		p.Legend.Add(fmt.Sprintf("%s (%d runs)", s.Method, s.Runs), line)
	}
	p.Add(plotter.NewGrid())
	if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("simulate: saving plot: %w", err)
	}
	return nil
}

func withAlpha(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), a}
}

// MarkdownTable formats the final regret per method, with the lifting branch of each
// po-gp-ucb r when lifts are given.
func MarkdownTable(sums []Summary, lifts []Lift) string {
	var b strings.Builder
	lifted := map[string]string{}
	for _, l := range lifts {
		br := "no (σ_min ≥ ω)"
		if l.Lifted {
			br = "yes (σ_min < ω)"
		}
		lifted[Method{Kind: POGPUCB, R: l.R}.String()] = fmt.Sprintf("%s; σ_min = %.4g, ω = %.4g", br, l.SigmaMin, l.Omega)
	}
	fmt.Fprintf(&b, "| method | runs | mean S_T | standard error | top-1%% hit rate ± SE | lifted |\n| --- | ---: | ---: | ---: | ---: | --- |\n")
	for _, s := range sums {
		m, se := s.Final()
		l := cmp.Or(lifted[s.Method], "—")
		hit := "—"
		if !math.IsNaN(s.TopOne) {
			hit = fmt.Sprintf("%.3f ± %.3f", s.TopOne, s.TopOneSE)
		}
		fmt.Fprintf(&b, "| %s | %d | %.3g | %.2g | %s | %s |\n", s.Method, s.Runs, m, se, hit, l)
	}
	return b.String()
}

func writeOutputs(cfg *Config, res *Result) error {
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	res.CSVPath = filepath.Join(cfg.OutDir, "regret.csv")
	f, err := os.Create(res.CSVPath)
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	w := bufio.NewWriter(f)
	if err := WriteCSV(w, res.Rows); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("simulate: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	res.PNGPath = filepath.Join(cfg.OutDir, "regret.png")
	title := fmt.Sprintf("%s (n = %d, d = %d), ε = %.4g, δ = %g", res.Problem, res.N, res.D, cfg.Epsilon, cfg.Delta)
	if err := WritePlot(res.PNGPath, title, res.Summary); err != nil {
		return err
	}
	res.SummaryPath = filepath.Join(cfg.OutDir, "summary.md")
	text := fmt.Sprintf("%s: n = %d, d = %d, T = %d, %d draw(s) × %d runs, ε = %.6g, δ = %g, %s, %s, seed %d, %v\n\n%s",
		res.Problem, res.N, res.D, cfg.Iterations, cfg.Draws, cfg.Runs, cfg.Epsilon, cfg.Delta, cfg.ProjectionText(), res.Output, cfg.Seed, res.Duration.Round(1e9), MarkdownTable(res.Summary, res.Lifts))
	if err := os.WriteFile(res.SummaryPath, []byte(text), 0o644); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	return nil
}

// outputDescription states how the curator released the answers and the GP prior used
// for them (Result.Output). cfg must have its defaults filled in.
func outputDescription(cfg *Config) string {
	o := cfg.output
	if answer.IsExact(o.Mechanism) {
		return "exact answers"
	}
	rule := cmp.Or(cfg.GP.NoiseRule, DefaultNoiseRule)
	out := "standardised"
	if !cfg.standardise {
		out = fmt.Sprintf("raw, offset %.4g", cfg.offset)
	}
	d := ""
	if !answer.PureEpsilon(o.Mechanism) {
		d = fmt.Sprintf(", δ_out = %g", o.Delta)
	}
	return fmt.Sprintf("%s answers (ε_out = %g%s, range [%g, %g]; GP noise rule %s: σ_y² = %.4g, σ_n² = %.4g, %s)",
		o.Mechanism, o.Epsilon, d, o.Lower, o.Upper, rule, cfg.GP.SignalVariance, cfg.GP.NoiseVariance, out)
}
