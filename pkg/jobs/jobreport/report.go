// Package jobreport renders a job's report for people: one self-contained HTML page
// showing the job's path — its spec, its charge under its neighbour relation, its
// events, what it released and, for a Kusner job, its forecast. The modeler's command
// writes it from what the curator sent, the curator's job-report command from its own
// store; what differs between kinds (the spec's words, what the modeler may know of
// the path, how event times are shown) comes from the job's kind (jobspec.Kind).
package jobreport

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/privbo/privbo/internal/htmlstyle"
	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/jobs/jobspec"
	"github.com/privbo/privbo/pkg/kusner"
)

// Two audiences see different paths. The modeler's report (built from what the curator
// sent: the job record, its events, a quote) shows only what the job's guarantee
// covers: the released candidate and score, the charge, the public constants, the
// data-free events. For DP-HyPO that excludes the number of runs (releasing it would
// void Theorem 1), every run's point and score and every sampling distribution: the
// modeler sees the prior (uniform), the public envelope every sampling distribution
// lies in — c/N ≤ π̃ ≤ C/N, fixed by the spec — and E[T], not the path inside it. The
// operator's report (Report.Trace, from the curator's own store) adds the path itself:
// the runs, their points and noisy scores, and how the sampling distribution moved.

// ReportHTML is the report's file name inside its directory.
const ReportHTML = "index.html"

// Report is what a job's report shows.
type Report struct {
	Job    jobs.Job
	Events []jobs.Event
	// Relation is the neighbour relation the charge was made under.
	Relation string
	// Forecast is a Kusner job's forecast (nil if none).
	Forecast *kusner.Forecast
	// Trace is the operator-only path (nil in a modeler's report).
	Trace *jobs.Trace
	// Generated is when the report was made.
	Generated time.Time
}

// Write renders r into dir/index.html (dir created if needed) and returns its path.
func Write(r Report, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("jobs: report: %w", err)
	}
	var b bytes.Buffer
	if err := reportTemplate.Execute(&b, reportView(r)); err != nil {
		return "", fmt.Errorf("jobs: report: %w", err)
	}
	path := filepath.Join(dir, ReportHTML)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("jobs: report: %w", err)
	}
	return path, nil
}

type row = jobspec.Row

func kv(k, v string) row { return row{K: k, V: v} }

type view struct {
	R                   Report
	Kind, Audience      string
	Spec, Released      []row
	Constants, Forecast []row
	ForecastVerdict     string
	Path                []row // what the modeler may see of the path
	Events              []eventRow
	GridSVG             template.HTML
	Steps               []stepRow
	Operator            bool
	Notes               []string
}

type eventRow struct{ Seq, Time, State, Progress, Message string }

type stepRow struct {
	Run, Point, Score, Max, Min, Entropy string
	Best                                 bool
}

var g = jobspec.Figure

func reportView(r Report) view {
	j := r.Job
	v := view{R: r, Kind: j.Spec.Kind(), Audience: "modeler", Operator: r.Trace != nil}
	if v.Operator {
		v.Audience = "curator's operator (includes what the guarantee does not cover: never send it to a modeler)"
	}
	timing := jobspec.TimingClock
	var axes []hparam.Axis
	if k := jobspec.KindOf(j.Spec); k != nil {
		d := k.Describe(j.Spec)
		axes, v.Spec, v.Path, v.Notes, timing = d.Grid, d.Spec, d.Path, d.Notes, k.Timing()
	}
	for _, a := range axes {
		v.Spec = append(v.Spec, kv("grid: "+a.Name, axisWords(a)))
	}
	if res := j.Result; res != nil {
		if res.HasHyperparameters {
			names := make([]string, 0, len(res.Hyperparameters))
			for k := range res.Hyperparameters {
				names = append(names, k)
			}
			slices.Sort(names)
			for _, k := range names {
				v.Released = append(v.Released, kv(k, g(res.Hyperparameters[k])))
			}
		}
		v.Released = append(v.Released, kv("score", g(res.Score)))
		names := make([]string, 0, len(res.Constants))
		for k := range res.Constants {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			v.Constants = append(v.Constants, kv(k, g(res.Constants[k])))
		}
	}
	if f := r.Forecast; f != nil {
		if f.HasSelection {
			v.Forecast = append(v.Forecast,
				kv("hyperparameter: chance of the one candidate within "+g(f.Gap)+" of the posterior maximum", g(f.WithinGapMin)+" to "+g(f.WithinGapMax)),
				kv("uniform pick", g(f.UniformProbability)),
				kv("at most, over a uniform pick", g(f.SelectionLift)+"×"),
				kv("ε at which it beats a uniform pick by the margin", g(f.SelectionEpsilon)))
		}
		v.Forecast = append(v.Forecast,
			kv("value: Laplace scale (objective range "+g(f.Range)+")", g(f.LaplaceScale)),
			kv("value within "+g(f.Gap)+" of the truth", g(f.ValueWithinGap)+" (a uniform guess: "+g(f.UniformValueWithinGap)+", "+g(f.ValueLift)+"×)"),
			kv("ε at which the value beats a uniform guess by the margin", g(f.ValueEpsilon)))
		v.ForecastVerdict = fmt.Sprintf("Informative: a release beats a uniform pick by the margin of %g%%.", 100*f.Margin)
		if !f.Informative {
			v.ForecastVerdict = fmt.Sprintf("NOT informative: no release beats a uniform pick by %g%% (one would from ε = %s).", 100*f.Margin, g(f.EpsilonNeeded))
		}
	}
	var t0 time.Time
	for k, e := range r.Events {
		if k == 0 {
			t0 = e.Time
		}
		p := ""
		if e.Total > 0 {
			p = fmt.Sprintf("%d / %d", e.Step, e.Total)
		}
		when := e.Time.Format(time.RFC3339)
		switch {
		case k == 0:
		case timing == jobspec.TimingElapsed:
			when = "+" + e.Time.Sub(t0).Round(time.Millisecond).String()
		case timing == jobspec.TimingHidden && !v.Operator:
			when = "" // elapsed time correlates with what the guarantee hides
		}
		v.Events = append(v.Events, eventRow{fmt.Sprint(e.Seq), when, string(e.State), p, e.Message})
	}
	space, err := hparam.SpaceOf(axes...)
	if err == nil {
		v.GridSVG = gridSVG(space, j.Result, r.Trace)
	}
	if tr := r.Trace; tr != nil {
		best, bestScore := -1, math.Inf(-1)
		for k, s := range tr.Steps {
			if !s.Failed && s.Score > bestScore {
				best, bestScore = k, s.Score
			}
		}
		for k, s := range tr.Steps {
			score := g(s.Score)
			if s.Failed {
				score = "failed"
			}
			v.Steps = append(v.Steps, stepRow{fmt.Sprint(s.Run), pointWords(s.Hyperparameters), score, g(s.MaxDensity), g(s.MinDensity), fmt.Sprintf("%.4f", s.Entropy), k == best})
		}
		v.Path = append(v.Path, kv("runs (operator only)", fmt.Sprint(len(tr.Steps))))
	}
	return v
}

func axisWords(a hparam.Axis) string {
	switch a.Kind {
	case hparam.AxisLog:
		return fmt.Sprintf("%d values log-spaced in [%g, %g]", a.Count, a.Low, a.High)
	case hparam.AxisLinear:
		return fmt.Sprintf("%d values evenly spaced in [%g, %g]", a.Count, a.Low, a.High)
	}
	parts := make([]string, len(a.Values))
	for k, x := range a.Values {
		parts[k] = g(x)
	}
	return strings.Join(parts, ", ")
}

func pointWords(p map[string]float64) string {
	names := make([]string, 0, len(p))
	for k := range p {
		names = append(names, k)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for k, n := range names {
		parts[k] = n + " = " + g(p[n])
	}
	return strings.Join(parts, ", ")
}

// gridSVG draws a one- or two-dimensional grid: every point as a cell, the released
// candidate outlined; with a trace, cells shaded by the last sampling distribution
// (π̃·N) and labelled with their visit counts.
func gridSVG(space hparam.Space, res *jobs.Result, tr *jobs.Trace) template.HTML {
	dim := space.Dim()
	if dim < 1 || dim > 2 {
		return ""
	}
	rows, cols := 1, len(space.Params[0].Values)
	if dim == 2 {
		rows, cols = len(space.Params[0].Values), len(space.Params[1].Values)
	}
	const cell, left, top = 26, 90, 30
	w, h := left+cols*cell+10, top+rows*cell+40
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-size="10" font-family="sans-serif">`, w, h)
	released := -1
	if res != nil && res.HasHyperparameters {
		for i := range space.Size() {
			p := space.Point(i)
			same := true
			for k, x := range p {
				if v, ok := res.Hyperparameters[k]; !ok || math.Abs(v-x) > 1e-12*math.Max(math.Abs(x), 1e-300) {
					same = false
				}
			}
			if same {
				released = i
				break
			}
		}
	}
	maxD := 0.0
	if tr != nil {
		for _, x := range tr.Final {
			maxD = max(maxD, x)
		}
	}
	for i := range space.Size() {
		r, c := 0, i
		if dim == 2 {
			r, c = i/cols, i%cols
		}
		x, y := left+c*cell, top+r*cell
		fill := "#f4f7fb"
		if tr != nil && i < len(tr.Final) && maxD > 0 {
			a := tr.Final[i] / maxD
			fill = fmt.Sprintf("rgb(%d,%d,%d)", int(244-150*a), int(247-100*a), 251)
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#ccd"/>`, x, y, cell, cell, fill)
		if tr != nil && i < len(tr.Visits) && tr.Visits[i] > 0 {
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%d</text>`, x+cell/2, y+cell/2+4, tr.Visits[i])
		}
		if i == released {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#c00" stroke-width="3"/>`, x+1, y+1, cell-2, cell-2)
		}
	}
	if dim == 2 {
		for r, val := range space.Params[0].Values {
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, left-4, top+r*cell+cell/2+4, template.HTMLEscapeString(g(val)))
		}
		fmt.Fprintf(&b, `<text x="4" y="%d">%s ↓</text>`, top-8, template.HTMLEscapeString(space.Params[0].Name))
		for c, val := range space.Params[1].Values {
			if c%2 == 0 {
				fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`, left+c*cell+cell/2, top+rows*cell+14, template.HTMLEscapeString(g(val)))
			}
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s →</text>`, left, top+rows*cell+30, template.HTMLEscapeString(space.Params[1].Name))
	} else {
		for c, val := range space.Params[0].Values {
			if c%2 == 0 {
				fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`, left+c*cell+cell/2, top+cell+14, template.HTMLEscapeString(g(val)))
			}
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s →</text>`, left, top+cell+30, template.HTMLEscapeString(space.Params[0].Name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built from numbers and escaped names only
}

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{"css": func() template.CSS { return htmlstyle.CSS }}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>privbo job {{.R.Job.ID}}</title>
<style>{{css}}</style></head><body>
<h1>Job {{.R.Job.ID}} ({{.Kind}})</h1>
<p class="sub">State {{.R.Job.State}}; created {{.R.Job.Created.Format "2006-01-02 15:04:05 MST"}}; report for the {{.Audience}}, generated {{.R.Generated.Format "2006-01-02 15:04:05 MST"}}.</p>
<div class="cards">
<div class="card"><div class="k">charged ε</div><div class="v">{{printf "%.6g" .R.Job.Cost.Epsilon}}</div></div>
<div class="card"><div class="k">charged δ</div><div class="v">{{printf "%.3g" .R.Job.Cost.Delta}}</div></div>
<div class="card"><div class="k">neighbour relation</div><div class="v">{{.R.Relation}}</div></div>
</div>
<h2>Guarantee</h2>
<p>{{.R.Job.Guarantee}}</p>
{{if .R.Job.Error}}<p class="warn">Error: {{.R.Job.Error}}</p>{{end}}
<h2>Released</h2>
{{if .Released}}<table>{{range .Released}}<tr><th>{{.K}}</th><td>{{.V}}</td></tr>{{end}}</table>{{else}}<p>Nothing yet.</p>{{end}}
{{if .Constants}}<p>Public constants of the release:</p><table>{{range .Constants}}<tr><th>{{.K}}</th><td>{{.V}}</td></tr>{{end}}</table>{{end}}
{{if .Forecast}}<h2>Forecast (before the charge, from public quantities only)</h2>
<p>{{.ForecastVerdict}}</p>
<table>{{range .Forecast}}<tr><th>{{.K}}</th><td>{{.V}}</td></tr>{{end}}</table>{{end}}
<h2>Path</h2>
<table>{{range .Path}}<tr><th>{{.K}}</th><td>{{.V}}</td></tr>{{end}}</table>
{{if .GridSVG}}<p>The grid{{if .Operator}}, shaded by the last sampling distribution (darker: more likely), with the number of runs at each point{{end}}; the released candidate outlined in red.</p>
{{.GridSVG}}{{end}}
{{if .Operator}}<h3>Runs (operator only)</h3>
<p class="warn">None of this table is covered by the job's guarantee: the number of runs, the points, the scores and the sampling distributions stay on the curator.</p>
<table><tr><th>run</th><th>point</th><th>noisy score</th><th>max π̃·N</th><th>min π̃·N</th><th>entropy / log N</th></tr>
{{range .Steps}}<tr{{if .Best}} class="best"{{end}}><td>{{.Run}}</td><td>{{.Point}}</td><td>{{.Score}}</td><td>{{.Max}}</td><td>{{.Min}}</td><td>{{.Entropy}}</td></tr>{{end}}
</table>{{end}}
<h2>Spec</h2>
<table>{{range .Spec}}<tr><th>{{.K}}</th><td>{{.V}}</td></tr>{{end}}</table>
<h2>Events</h2>
<table><tr><th>#</th><th>time</th><th>state</th><th>progress</th><th>message</th></tr>
{{range .Events}}<tr><td>{{.Seq}}</td><td>{{.Time}}</td><td>{{.State}}</td><td>{{.Progress}}</td><td>{{.Message}}</td></tr>{{end}}
</table>
{{range .Notes}}<p class="sub">{{.}}</p>{{end}}
</body></html>
`))
