package study

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"fmt"
	"html/template"
	"image/color"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/privbo/privbo/internal/htmlstyle"
)

// Report file names inside the output directory.
const (
	ReportHTML   = "index.html"
	ReportValues = "values.png"
	ReportRegret = "regret.png"
)

// TopRecords is how many rows the report lists as the best found.
const TopRecords = 10

// WriteReport renders st and its observations into dir (created if needed): index.html,
// self-contained (inline CSS, the plots embedded as data URIs), and beside it the plots
// as values.png and, when st.KnownBest is set, regret.png. It returns the HTML's path.
// The page leads with rec, the study's recommended row (nil: none yet, as before the
// first answer), and what the answers' noise allows; the best single answer follows,
// labelled a noisy answer when the answers are private.
func WriteReport(st *Study, obs []Observation, rec *Recommendation, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("study: report: %w", err)
	}
	d := reportData{Study: st, Obs: obs, Generated: time.Now().UTC().Format(time.RFC3339), Done: len(obs),
		Total: st.Settings.Iterations}
	d.State = "in progress"
	if st.Done {
		d.State = "done"
	}
	sdir := st.Settings.Direction
	d.Direction = sdir.String()
	d.Extreme = sdir.Extreme()
	d.BestIndex, d.BestValue = Best(obs, sdir)
	d.HasBest = d.BestIndex >= 0
	d.AnswerLabel = d.Extreme + " answer"
	d.AnswersTitle = strings.ToUpper(d.Extreme[:1]) + d.Extreme[1:] + " answers"
	if rel := st.Release; rel != nil {
		d.Noisy = !rel.OutputPrivacy.Exact()
		sd := 0.0
		if rec != nil {
			sd = rec.AnswerNoiseSD
		}
		d.NoiseText = AnswerNoiseText(rel.OutputPrivacy, sd)
		if d.Noisy {
			d.AnswerLabel = d.Extreme + " noisy answer"
			d.AnswersTitle += " (noisy answers, not the rows' values)"
			d.Range = fmt.Sprintf("[%s, %s]", g(rel.OutputPrivacy.Lower), g(rel.OutputPrivacy.Upper))
			d.NoiseSD = sd
		}
	}
	if rec != nil && rec.Index >= 0 && len(obs) > 0 {
		d.Rec = rec
	}
	d.Top = topRecords(obs, TopRecords, sdir)
	d.Settings = settingRows(st.Settings)
	d.Privacy = privacyRows(st, obs)
	rounds := 0
	for _, o := range obs {
		rounds = max(rounds, o.Round)
	}
	d.Rounds = rounds

	vp, err := valuesPlot(st, obs, d.Rec)
	if err != nil {
		return "", err
	}
	png, err := savePNG(vp)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ReportValues), png, 0o644); err != nil {
		return "", fmt.Errorf("study: report: %w", err)
	}
	d.ValuesPNG = dataURI(png)
	if st.KnownBest != nil && len(obs) > 0 {
		d.KnownBest = *st.KnownBest
		d.HasKnownBest = true
		d.FinalRegret = sdir.Regret(*st.KnownBest, d.BestValue)
		png, err := regretPlot(*st.KnownBest, obs, sdir)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, ReportRegret), png, 0o644); err != nil {
			return "", fmt.Errorf("study: report: %w", err)
		}
		d.RegretPNG = dataURI(png)
	}
	var b bytes.Buffer
	if err := reportTmpl.Execute(&b, d); err != nil {
		return "", fmt.Errorf("study: report: %w", err)
	}
	path := filepath.Join(dir, ReportHTML)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("study: report: %w", err)
	}
	return path, nil
}

type reportData struct {
	Study                *Study
	Obs                  []Observation
	Generated, State     string
	Done, Total, Rounds  int
	HasBest              bool
	BestIndex            int
	BestValue            float64
	Top                  []record
	Settings, Privacy    [][2]string
	ValuesPNG, RegretPNG template.URL
	HasKnownBest         bool
	// Direction is "maximize" or "minimize" (Settings.Direction), Extreme "highest" or
	// "lowest".
	Direction, Extreme     string
	KnownBest, FinalRegret float64
	// Rec is the recommended row (nil before the first answer). Noisy is set for
	// private answers, whose noise has sd NoiseSD on the target's public range Range;
	// NoiseText says what that allows. AnswerLabel names the best single answer
	// ("highest noisy answer"), AnswersTitle heads the table of the best answers.
	Rec                       *Recommendation
	Noisy                     bool
	NoiseSD                   float64
	Range, NoiseText          string
	AnswerLabel, AnswersTitle string
}

type record struct {
	Rank, Index, Iteration int
	Value                  float64
}

// topRecords returns the n best distinct rows in direction d, by value (ties: earlier
// iteration first).
func topRecords(obs []Observation, n int, d Direction) []record {
	seen := map[int]bool{}
	var recs []record
	for _, o := range obs {
		if !seen[o.Index] {
			seen[o.Index] = true
			recs = append(recs, record{Index: o.Index, Iteration: o.Iteration, Value: o.Value})
		}
	}
	sort.SliceStable(recs, func(a, b int) bool { return d.Better(recs[a].Value, recs[b].Value) })
	if len(recs) > n {
		recs = recs[:n]
	}
	for k := range recs {
		recs[k].Rank = k + 1
	}
	return recs
}

func settingRows(s Settings) [][2]string {
	fv := s.Named()
	rows := make([][2]string, 0, len(fv))
	for _, k := range slices.Sorted(maps.Keys(fv)) {
		v := fv[k]
		switch {
		case k == "lengthscale" && s.Lengthscale == 0:
			v = "0 (default: from Z)"
		case k == "beta" && s.ConstantBeta == 0:
			v = "0 (schedule β_t)"
		case k == "fit-every" && s.FitEvery == 0:
			v = "0 (fixed hyperparameters)"
		case k == "fit-every":
			v += " (observations between maximum-likelihood refits)"
		case k == "projection-noise" && s.ProjectionNoise == "":
			v = "model (default: the GP models the projection's stated noise)"
		case k == "initial-index" && s.InitialIndex < 0:
			v = "−1 (uniformly random)"
		case k == "answer-clip" && s.AnswerClip == "":
			v = "public (the curator's public output range)"
		case k == "recommend-likelihood" && s.RecommendLikelihood == "":
			v = "laplace (default: the answers' own, with Laplace answers)"
		}
		rows = append(rows, [2]string{k, v})
	}
	return rows
}

func g(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// g3 is v to 3 significant digits, for a standard deviation; g4 to 4, for a mean.
func g3(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }
func g4(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// privacyRows states what the study cost and protects: the release (with its neighbour
// relation and the whole-patient sentence of its guarantee, when the curator stated them), the answers (private
// answers cost one (ε, δ) per identity, whatever the rows; exact answers protect nothing,
// so the study then has no guarantee for the answered rows, ε = ∞), and the identity's
// budget.
func privacyRows(st *Study, obs []Observation) [][2]string {
	var rows [][2]string
	add := func(k, v string) { rows = append(rows, [2]string{k, v}) }
	rel := st.Release
	if rel == nil {
		add("projection", "not released yet")
	} else {
		paid := "charged to this study"
		if rel.Replayed {
			paid = "replayed: released to this identity before, no new cost"
		}
		mech := ""
		if rel.Mechanism != "" {
			mech = ", mechanism " + rel.Mechanism
		}
		add("projection release", fmt.Sprintf("%s: (ε, δ) = (%s, %s)%s, %s", rel.ID, g(rel.Epsilon), g(rel.Delta), mech, paid))
		if rel.Relation != "" {
			add("projection relation", rel.Relation+relationWords[rel.Relation])
		}
		if w := wholePatient(rel.Guarantee); w != "" {
			add("whole patient", w)
		}
		if rel.Guarantee != "" {
			add("guarantee", rel.Guarantee)
		}
		if rel.ProtectedUnit != "" && !strings.Contains(rel.Guarantee, rel.ProtectedUnit) { // said once: the guarantee states it
			add("protected unit", rel.ProtectedUnit)
		}
	}
	distinct := map[int]bool{}
	for _, o := range obs {
		distinct[o.Index] = true
	}
	if rel != nil {
		op := rel.OutputPrivacy
		relEps, relDelta := rel.Epsilon, rel.Delta
		if rel.Replayed {
			relEps, relDelta = 0, 0
		}
		if op.Exact() {
			add("answers", fmt.Sprintf("%d queries, %d distinct rows, released exactly (output privacy none): no guarantee (ε = ∞)", len(obs), len(distinct)))
			if op.Guarantee != "" {
				add("answers' guarantee", op.Guarantee)
			}
			add("this study", fmt.Sprintf("no guarantee (ε = ∞) for the answered rows: their answers are exact; only the projection release has a stated (ε, δ) = (%s, %s)",
				g(rel.Epsilon), g(rel.Delta)))
		} else {
			ansEps, ansDelta := op.EpsilonPerIndex, op.DeltaPerIndex
			if len(distinct) == 0 {
				ansEps, ansDelta = 0, 0
			}
			add("answers", fmt.Sprintf("%d queries, %d distinct rows, %s mechanism on [%s, %s], each answer (ε, δ) = (%s, %s)-DP under the record relation; "+
				"the answers to one identity compose in parallel (each record influences one answer), so they cost at most (%s, %s) together, charged once per identity",
				len(obs), len(distinct), op.Mechanism, g(op.Lower), g(op.Upper), g(op.EpsilonPerIndex), g(op.DeltaPerIndex), g(ansEps), g(ansDelta)))
			if op.Guarantee != "" {
				add("answers' guarantee", op.Guarantee)
			}
			add("this study, at most", fmt.Sprintf("(ε, δ) = (%s, %s) under the feature-unit neighbour relation (the scaled features of one record moved by one protected unit), "+
				"by basic composition of the projection and the answers, whose record-level guarantee also holds for one unit; for a whole patient see the first row",
				g(relEps+ansEps), g(relDelta+ansDelta)))
		}
		if w := studyWholePatient(rel, op, len(distinct) > 0); w != "" {
			// First: the figure a privacy officer copies.
			rows = append([][2]string{{"whole patient, this study", w}}, rows...)
		}
	}
	b := st.Budget
	if b.EpsilonLimit > 0 {
		who := cmp.Or(b.Identity, "the identity")
		add("budget of "+who, fmt.Sprintf("spent (ε, δ) = (%s, %s) of (%s, %s); remaining (%s, %s) at the last contact",
			g(b.EpsilonSpent), g(b.DeltaSpent), g(b.EpsilonLimit), g(b.DeltaLimit), g(b.EpsilonRemaining), g(b.DeltaRemaining)))
	}
	return rows
}

// studyWholePatient is what the study cost a whole patient — the replacement of one
// patient's record by any other — from the release's whole-patient figure as the
// curator's ledger recorded it and the answers' (ε, δ), which are stated for replacing a
// record already, added by basic composition; or why it is not bounded. "" when the
// curator did not state the release's figure.
func studyWholePatient(rel *Release, op OutputPrivacy, answered bool) string {
	w := rel.WholePatient
	if w == nil {
		return ""
	}
	switch {
	case !w.Bounded:
		return "NOT BOUNDED: the projection has no finite guarantee for replacing one patient's record (see its guarantee)"
	case op.Exact() && answered:
		return "NOT BOUNDED for the answered rows, whose answers are exact; the projection alone costs a whole patient " +
			fmt.Sprintf("(ε, δ) = (%s, %s)", g(w.Epsilon), g(w.Delta))
	}
	pe, pd := w.Epsilon, w.Delta
	paid := "the projection's"
	if rel.Replayed {
		pe, pd, paid = 0, 0, "the projection (replayed: released to this identity before, its figure counted then)"
	}
	ae, ad := 0.0, 0.0
	if answered && !op.Exact() {
		ae, ad = op.EpsilonPerIndex, op.DeltaPerIndex
	}
	return fmt.Sprintf("(ε, δ) = (%s, %s) for replacing one patient's record by any other (the record neighbour relation): %s (%s, %s), by group privacy "+
		"at the clip diameter, plus the answers' (%s, %s), by basic composition", g(pe+ae), g(pd+ad), paid, g(w.Epsilon), g(w.Delta), g(ae), g(ad))
}

// relationWords explains the neighbour relations a projection is stated under (package
// ledger's names).
var relationWords = map[string]string{
	"feature-unit": " (neighbours differ in one record's scaled feature vector by at most one protected unit)",
	"record":       " (neighbours differ in one record replaced by any other)",
}

// wholePatientLabel opens the whole-patient sentence of a curator's projection guarantee
// (curator.WholePatientLabel; this package does not import the curator's).
const wholePatientLabel = "Whole patient: "

// wholePatient returns the whole-patient sentence of a projection guarantee without its
// label and full stop: the ε for replacing one patient's record by any other, with its
// table by distance, or why there is none ("" from curators that did not state it). The
// sentence holds no ". " until its end.
func wholePatient(guarantee string) string {
	i := strings.Index(guarantee, wholePatientLabel)
	if i < 0 {
		return ""
	}
	w := guarantee[i+len(wholePatientLabel):]
	if j := strings.Index(w, ". "); j >= 0 {
		w = w[:j]
	}
	return strings.TrimSuffix(strings.TrimSpace(w), ".")
}

func dataURI(png []byte) template.URL {
	return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(png))
}

// runningBest is y*_t = max_{s ≤ t} y_s (min when d minimises).
func runningBest(obs []Observation, d Direction) plotter.XYs {
	xy := make(plotter.XYs, len(obs))
	best := math.NaN()
	for k, o := range obs {
		if d.Better(o.Value, best) {
			best = o.Value
		}
		xy[k] = plotter.XY{X: float64(o.Iteration), Y: best}
	}
	return xy
}

var (
	blue  = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	red   = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	green = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
)

// valuesPlot draws each answer and, leading the legend, the recommended row rec (nil:
// none) at the iteration it was first queried, with its posterior mean ± sd; with
// private answers the range the values are clipped to before noise, against which the
// noise reads. The best single answer is not drawn: with private answers it is mostly
// the luckiest noise draw.
func valuesPlot(st *Study, obs []Observation, rec *Recommendation) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "value of each query"
	p.X.Label.Text = "iteration t"
	p.Y.Label.Text = "answer y_t"
	p.Legend.Top, p.Legend.Left = false, false
	p.Add(plotter.NewGrid())
	if len(obs) == 0 {
		return p, nil
	}
	pts := make(plotter.XYs, len(obs))
	lo, hi := math.Inf(1), math.Inf(-1)
	recAt := -1.0
	for k, o := range obs {
		pts[k] = plotter.XY{X: float64(o.Iteration), Y: o.Value}
		lo, hi = min(lo, o.Value), max(hi, o.Value)
		if rec != nil && o.Index == rec.Index && recAt < 0 {
			recAt = float64(o.Iteration)
		}
	}
	last := float64(max(obs[len(obs)-1].Iteration, 2))
	hline := func(y float64, c color.Color) (*plotter.Line, error) {
		l, err := plotter.NewLine(plotter.XYs{{X: 1, Y: y}, {X: last, Y: y}})
		if err != nil {
			return nil, fmt.Errorf("study: plot: %w", err)
		}
		l.Color, l.Dashes = c, []vg.Length{vg.Points(4), vg.Points(3)}
		return l, nil
	}
	if rec != nil && recAt >= 0 {
		bar, err := plotter.NewLine(plotter.XYs{{X: recAt, Y: rec.Mean - rec.SD}, {X: recAt, Y: rec.Mean + rec.SD}})
		if err != nil {
			return nil, fmt.Errorf("study: plot: %w", err)
		}
		bar.Color, bar.Width = red, vg.Points(2)
		mean, err := plotter.NewScatter(plotter.XYs{{X: recAt, Y: rec.Mean}})
		if err != nil {
			return nil, fmt.Errorf("study: plot: %w", err)
		}
		mean.Color, mean.Shape, mean.Radius = red, draw.BoxGlyph{}, vg.Points(4)
		p.Add(bar, mean)
		p.Legend.Add(fmt.Sprintf("recommended row %d: posterior mean %s ± %s", rec.Index, g4(rec.Mean), g3(rec.SD)), mean, bar)
		lo, hi = min(lo, rec.Mean-rec.SD), max(hi, rec.Mean+rec.SD)
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, fmt.Errorf("study: plot: %w", err)
	}
	sc.Color, sc.Shape, sc.Radius = blue, draw.CircleGlyph{}, vg.Points(2.5)
	p.Add(sc)
	p.Legend.Add("each answer", sc)
	if rel := st.Release; rel != nil && !rel.OutputPrivacy.Exact() && rel.OutputPrivacy.Upper > rel.OutputPrivacy.Lower {
		op := rel.OutputPrivacy
		lower, err := hline(op.Lower, color.Gray{Y: 0x80})
		if err != nil {
			return nil, err
		}
		upper, err := hline(op.Upper, color.Gray{Y: 0x80})
		if err != nil {
			return nil, err
		}
		p.Add(lower, upper)
		p.Legend.Add(fmt.Sprintf("range of the values, before noise: [%s, %s]", g(op.Lower), g(op.Upper)), lower)
		lo, hi = min(lo, op.Lower), max(hi, op.Upper)
	}
	if st.KnownBest != nil {
		opt, err := hline(*st.KnownBest, green)
		if err != nil {
			return nil, err
		}
		p.Add(opt)
		p.Legend.Add("known optimum", opt)
		hi = max(hi, *st.KnownBest)
	}
	// Room below the data for the legend (bottom right).
	span := max(hi-lo, math.Abs(hi)*1e-3, 1e-9)
	p.Y.Min, p.Y.Max = lo-0.35*span, hi+0.05*span
	return p, nil
}

func regretPlot(known float64, obs []Observation, d Direction) ([]byte, error) {
	p := plot.New()
	p.Title.Text = "simple regret"
	p.X.Label.Text = "iteration t"
	p.Y.Label.Text = "f* − best so far"
	if d == Minimize {
		p.Y.Label.Text = "best so far − f*"
	}
	p.Add(plotter.NewGrid())
	xy := runningBest(obs, d)
	for k := range xy {
		xy[k].Y = d.Regret(known, xy[k].Y)
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return nil, fmt.Errorf("study: plot: %w", err)
	}
	l.Color, l.Width, l.StepStyle = red, vg.Points(1.5), plotter.PostStep
	p.Add(l)
	p.Y.Min = math.Min(0, p.Y.Min)
	return savePNG(p)
}

func savePNG(p *plot.Plot) ([]byte, error) {
	w, err := p.WriterTo(7*vg.Inch, 4*vg.Inch, "png")
	if err != nil {
		return nil, fmt.Errorf("study: plot: %w", err)
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("study: plot: %w", err)
	}
	return b.Bytes(), nil
}

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{"g": g, "g3": g3, "g4": g4, "css": func() template.CSS { return htmlstyle.CSS }}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>privbo study {{.Study.Name}}</title>
<style>{{css}}</style>
</head>
<body>
<h1>Study {{.Study.Name}}</h1>
<p class="sub">{{with .Study.Release}}dataset {{.Dataset}} ({{.Rows}} rows, Z of dimension {{.Cols}}) · {{end}}{{.State}} · generated {{.Generated}}</p>
<div class="cards">
<div class="card rec"><div class="k">recommended row ({{.Extreme}} posterior mean)</div><div class="v">{{with .Rec}}{{.Index}}{{else}}–{{end}}</div></div>
<div class="card rec"><div class="k">posterior mean ± sd</div><div class="v">{{with .Rec}}{{g4 .Mean}} ± {{g3 .SD}}{{else}}–{{end}}</div></div>
{{if .Noisy}}<div class="card"><div class="k">answer noise sd, on {{.Range}}</div><div class="v">{{if .NoiseSD}}{{g3 .NoiseSD}}{{else}}–{{end}}</div></div>{{end}}
<div class="card"><div class="k">iterations</div><div class="v">{{.Done}} / {{.Total}}</div></div>
<div class="card"><div class="k">rounds (Query requests)</div><div class="v">{{.Rounds}}</div></div>
<div class="card"><div class="k">{{.AnswerLabel}}</div><div class="v">{{if .HasBest}}{{g .BestValue}}{{else}}–{{end}}</div></div>
<div class="card"><div class="k">row of the {{.AnswerLabel}}</div><div class="v">{{if .HasBest}}{{.BestIndex}}{{else}}–{{end}}</div></div>
{{if .HasKnownBest}}<div class="card"><div class="k">simple regret (of the {{.AnswerLabel}})</div><div class="v">{{g .FinalRegret}}</div></div>{{end}}
</div>
{{with .Study.LastError}}<p class="err">The last run stopped with: {{.}}</p>{{end}}

<h2>Recommendation</h2>
{{with .Rec}}<p id="recommendation">Row <b>{{.Index}}</b> has the {{$.Extreme}} posterior mean among the {{$.Done}} queried rows ({{$.Direction}}):
<b>{{g4 .Mean}} ± {{g3 .SD}}</b> (the GP's posterior mean ± one standard deviation of the objective at that row, in the answers' units).
This is the row to act on: it pools every answer through the GP.</p>
{{else}}<p id="recommendation">{{if .Obs}}No recommendation was computed for this page.{{else}}No recommendation yet: no answers.{{end}}</p>{{end}}
{{with .NoiseText}}<p>Answer noise: {{.}}.</p>{{end}}

<h2>{{.AnswersTitle}}</h2>
{{if .Top}}<table>
<tr><th>rank</th><th>row</th><th>{{if .Noisy}}noisy answer{{else}}answer{{end}}</th><th>first queried at iteration</th></tr>
{{range .Top}}<tr><td class="num">{{.Rank}}</td><td class="num">{{.Index}}</td><td class="num">{{g .Value}}</td><td class="num">{{.Iteration}}</td></tr>
{{end}}</table>{{else}}<p>No answers yet.</p>{{end}}

<h2>Value per iteration</h2>
<img alt="value of each query and the best so far" src="{{.ValuesPNG}}">

{{if .HasKnownBest}}<h2>Regret</h2>
<p>Simple regret {{if eq .Direction "minimize"}}min<sub>s≤t</sub> y<sub>s</sub> − f*{{else}}f* − max<sub>s≤t</sub> y<sub>s</sub>{{end}} with the known optimum f* = {{g .KnownBest}}.</p>
<img alt="simple regret per iteration" src="{{.RegretPNG}}">
{{end}}

<h2>Privacy spent</h2>
<table>
{{range .Privacy}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>
{{end}}</table>

<h2>Settings</h2>
<table>
{{range .Settings}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>
{{end}}<tr><th>curator</th><td>{{.Study.Connection.Curator}}{{with .Study.Connection.Identity}} as {{.}}{{end}}</td></tr>
<tr><th>initial row</th><td>{{.Study.InitialIndex}}</td></tr>
</table>

<h2>All queries</h2>
<table>
<tr><th>iteration</th><th>round</th><th>row</th><th>value</th><th>replayed</th></tr>
{{range .Obs}}<tr><td class="num">{{.Iteration}}</td><td class="num">{{.Round}}</td><td class="num">{{.Index}}</td><td class="num">{{g .Value}}</td><td>{{if .Replayed}}yes{{end}}</td></tr>
{{end}}</table>
</body>
</html>
`))
