package console

import (
	"context"
	"fmt"
	"html/template"
	"math"
	"math/big"
	"strconv"

	"github.com/privbo/privbo/internal/htmlstyle"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/ledger"
)

// maxReleases and maxRows bound the page: the latest releases, and each identity's
// first answered rows (`curator results` lists them all).
const maxReleases, maxRows = 20, 25

// page is what the template shows; every figure is already text.
type page struct {
	Dataset, Generated string
	Patient            []patientRow
	Relations          []relationTable
	Limits             []limitRow
	Chart              template.HTML
	Releases           []releaseRow
	ReleasesTotal      int
	JobsOn             bool
	Jobs               []jobRow
	Outcome            string
	RankedAmong        int
	Studies            []studyRow
}

type patientRow struct {
	Who, Epsilon, Delta, Reserved, Cap, Left string
	Over                                     bool
}

type relationTable struct {
	Relation string
	Rows     []budgetRow
}

type budgetRow struct {
	Who, SpentEps, SpentDelta, Reserved, LeftEps, LeftDelta string
	Charges                                                 int
	Over                                                    bool
}

type limitRow struct{ Since, Identity, Dataset, PatientIdentity, PatientDataset string }

type releaseRow struct{ Time, Identity, Kind, Relation, Epsilon, Delta, Patient string }

type jobRow struct{ ID, Identity, Kind, State, Epsilon, Created, Error string }

type studyRow struct {
	Identity                 string
	Answered, Projections    int
	Best, BestTrue, BestRank string
	TopOnePercent            int
	Rows                     []answerRow
	More                     int
}

type answerRow struct {
	Order, Row                           int
	True, Rank, Percentile, Answer, Time string
}

// fig is x to 4 significant digits; inf says "not bounded".
func fig(x float64) string {
	if math.IsInf(x, 1) {
		return "not bounded"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// left is a remainder to 4 significant digits, rounded down so that it never shows
// more than a charge can spend.
func left(r *big.Rat) string {
	x, _ := r.Float64()
	if x <= 0 {
		return "0"
	}
	p := math.Pow(10, math.Floor(math.Log10(x))-3)
	return fig(math.Floor(x/p) * p)
}

func exact(r *big.Rat) string {
	x, _ := r.Float64()
	return fig(x)
}

func who(identity string) string {
	switch {
	case identity == "":
		return "dataset (all identities and the curator's own estimates)"
	case ledger.IsReserved(identity):
		return identity + " (the curator's own records: estimates, on which every identity's releases depend, and evaluations)"
	}
	return identity
}

func (p *page) patient(rep ledger.Report) {
	for _, r := range append([]ledger.PatientRow{rep.Patient.Dataset}, rep.Patient.Identities...) {
		c := r.Total.Cost()
		row := patientRow{Who: who(r.Identity), Epsilon: fig(c.Epsilon), Delta: fig(c.Delta), Reserved: exact(r.Reserved.Epsilon), Cap: "none", Left: "–", Over: r.OverLimit}
		if !r.Total.Bounded() {
			row.Delta = "–"
		}
		if r.Cap.Epsilon > 0 {
			row.Cap = "ε " + fig(r.Cap.Epsilon) + ", δ " + fig(r.Cap.Delta)
			if r.Left.Epsilon != nil {
				row.Left = "ε " + left(r.Left.Epsilon) + ", δ " + left(r.Left.Delta)
			}
		}
		p.Patient = append(p.Patient, row)
	}
}

func (p *page) relations(rep ledger.Report) {
	for _, rr := range rep.Relations {
		t := relationTable{Relation: string(rr.Relation)}
		for _, r := range append([]ledger.ReportRow{rr.Dataset}, rr.Identities...) {
			t.Rows = append(t.Rows, budgetRow{Who: who(r.Identity), SpentEps: exact(r.Spent.Epsilon), SpentDelta: exact(r.Spent.Delta),
				Reserved: exact(r.Reserved.Epsilon), LeftEps: left(r.Left.Epsilon), LeftDelta: left(r.Left.Delta), Charges: r.Charges, Over: r.OverLimit})
		}
		p.Relations = append(p.Relations, t)
	}
}

func limitRows(inForce ledger.Limits, history []ledger.RecordedLimits) []limitRow {
	cost := func(c ledger.Cost) string {
		if c.Epsilon == 0 {
			return "no cap"
		}
		return "ε " + fig(c.Epsilon) + ", δ " + fig(c.Delta)
	}
	row := func(since string, l ledger.Limits) limitRow {
		return limitRow{Since: since, Identity: cost(l.PerIdentity), Dataset: cost(l.Dataset), PatientIdentity: cost(l.Patient.PerIdentity), PatientDataset: cost(l.Patient.Dataset)}
	}
	if len(history) == 0 {
		return []limitRow{row("this curator's, not recorded yet", inForce)}
	}
	var out []limitRow
	for _, h := range history {
		out = append(out, row(h.Recorded.UTC().Format("2006-01-02 15:04:05"), h.Limits))
	}
	return out
}

// isRelease reports whether e is a charged release: evaluations and pending marks are
// the curator's own bookkeeping, and each answer's record (at no cost) is part of its
// identity's one charge for its answers, listed with the studies.
func isRelease(e ledger.Receipt) bool {
	switch e.Kind {
	case ledger.KindEvaluation, ledger.KindPending, ledger.KindQuery:
		return false
	}
	return true
}

func (p *page) releases(entries []ledger.Receipt) {
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if !isRelease(e) {
			continue
		}
		p.ReleasesTotal++
		if len(p.Releases) == maxReleases {
			continue
		}
		wp := "not bounded"
		if !e.Patient.Unbounded {
			wp = fig(e.Patient.Epsilon)
		}
		p.Releases = append(p.Releases, releaseRow{Time: e.Created.UTC().Format("2006-01-02 15:04:05"), Identity: e.Identity, Kind: e.Kind,
			Relation: string(e.Relation), Epsilon: fig(e.Cost.Epsilon), Delta: fig(e.Cost.Delta), Patient: wp})
	}
}

func (p *page) jobs(js []jobs.Job) {
	for _, j := range js {
		p.Jobs = append(p.Jobs, jobRow{ID: j.ID, Identity: j.Identity, Kind: j.Spec.Kind(), State: string(j.State), Epsilon: fig(j.Cost.Epsilon),
			Created: j.Created.UTC().Format("2006-01-02 15:04:05"), Error: j.Error})
	}
}

// studies ranks each identity's answered rows by their true outcome, highest first,
// as `curator results` does by default.
func (p *page) studies(ctx context.Context, cfg Config) error {
	ids, err := curator.Results(ctx, cfg.Ledger, cfg.Dataset)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	values := map[int]float64{}
	p.Outcome = "the data file's target"
	if cfg.Outcomes != nil {
		for i, y := range cfg.Outcomes {
			values[i] = y
		}
	} else {
		p.Outcome = "the curator's recorded evaluations"
		if values, err = curator.Evaluations(ctx, cfg.Ledger, cfg.Dataset); err != nil {
			return fmt.Errorf("console: %w", err)
		}
	}
	rk := curator.NewRanking(values, true)
	p.RankedAmong = rk.N()
	for _, id := range ids {
		s := studyRow{Identity: id.Identity, Projections: len(id.Projections), Best: "–", BestTrue: "–", BestRank: "–"}
		bestRank := 0
		for k, a := range id.Rows {
			if a.Pass == 0 {
				s.Answered++
			}
			r := answerRow{Order: k + 1, Row: a.Index, True: "–", Rank: "–", Percentile: "–", Answer: fig(a.Answer), Time: a.Time.Format("2006-01-02 15:04:05")}
			if v, ok := values[a.Index]; ok {
				rank, pct, top := rk.Rank(v)
				r.True, r.Rank, r.Percentile = fig(v), strconv.Itoa(rank), fig(100*pct)+"%"
				if a.Pass == 0 && top {
					s.TopOnePercent++
				}
				if a.Pass == 0 && (bestRank == 0 || rank < bestRank) {
					bestRank, s.Best, s.BestTrue, s.BestRank = rank, strconv.Itoa(a.Index), fig(v), strconv.Itoa(rank)
				}
			}
			if len(s.Rows) < maxRows {
				s.Rows = append(s.Rows, r)
			}
		}
		s.More = len(id.Rows) - len(s.Rows)
		p.Studies = append(p.Studies, s)
	}
	return nil
}

var pageTmpl = template.Must(template.New("console").Funcs(template.FuncMap{"css": func() template.CSS { return htmlstyle.CSS }}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>privbo console: {{.Dataset}}</title>
<style>{{css}}</style></head><body>
<h1>Privacy console: dataset {{.Dataset}}</h1>
<p class="sub">Read-only, for the curator's operators; generated {{.Generated}}.</p>
<p class="warn">This page shows true outcomes of the data. It releases nothing and costs no privacy budget; do not forward it.</p>

<h2>What one patient can lose</h2>
<p>Whole-patient totals: each release's (ε, δ) for replacing one patient's record by any other, added over every relation.</p>
<table id="patient"><tr><th>who</th><th>ε</th><th>δ</th><th>reserved ε</th><th>cap</th><th>left</th></tr>
{{range .Patient}}<tr{{if .Over}} class="best"{{end}}><td>{{.Who}}{{if .Over}} (over its cap){{end}}</td><td class="num">{{.Epsilon}}</td><td class="num">{{.Delta}}</td><td class="num">{{.Reserved}}</td><td>{{.Cap}}</td><td>{{.Left}}</td></tr>
{{end}}</table>

<h2>Spend over time</h2>
<p>The dataset's whole-patient ε after each release{{if .Chart}}; a dashed line marks its cap{{end}}.</p>
{{.Chart}}

<h2>Budgets by neighbour relation</h2>
<p>Spent and left as a charge finds them: an identity's left is the smaller of its own and the dataset's.</p>
{{range .Relations}}<h3>{{.Relation}}</h3>
<table><tr><th>who</th><th>charges</th><th>spent ε</th><th>spent δ</th><th>reserved ε</th><th>left ε</th><th>left δ</th></tr>
{{range .Rows}}<tr{{if .Over}} class="best"{{end}}><td>{{.Who}}{{if .Over}} (over its limit){{end}}</td><td class="num">{{.Charges}}</td><td class="num">{{.SpentEps}}</td><td class="num">{{.SpentDelta}}</td><td class="num">{{.Reserved}}</td><td class="num">{{.LeftEps}}</td><td class="num">{{.LeftDelta}}</td></tr>
{{end}}</table>
{{else}}<p>Nothing is spent yet.</p>{{end}}

<h2>Limits history</h2>
<table><tr><th>in force since (UTC)</th><th>per identity</th><th>dataset</th><th>whole patient, per identity</th><th>whole patient, dataset</th></tr>
{{range .Limits}}<tr><td>{{.Since}}</td><td>{{.Identity}}</td><td>{{.Dataset}}</td><td>{{.PatientIdentity}}</td><td>{{.PatientDataset}}</td></tr>
{{end}}</table>

<h2>Latest releases</h2>
{{if .Releases}}<p>The latest {{len .Releases}} of {{.ReleasesTotal}} charged releases, newest first (an identity's answers are one charge; they are listed below).</p>
<table><tr><th>time (UTC)</th><th>identity</th><th>kind</th><th>relation</th><th>ε</th><th>δ</th><th>whole-patient ε</th></tr>
{{range .Releases}}<tr><td>{{.Time}}</td><td>{{.Identity}}</td><td>{{.Kind}}</td><td>{{.Relation}}</td><td class="num">{{.Epsilon}}</td><td class="num">{{.Delta}}</td><td class="num">{{.Patient}}</td></tr>
{{end}}</table>{{else}}<p>No release yet.</p>{{end}}

<h2>Jobs</h2>
{{if not .JobsOn}}<p>This curator runs no jobs.</p>{{else if .Jobs}}<table><tr><th>job</th><th>identity</th><th>kind</th><th>state</th><th>ε</th><th>created (UTC)</th><th>error</th></tr>
{{range .Jobs}}<tr><td>{{.ID}}</td><td>{{.Identity}}</td><td>{{.Kind}}</td><td>{{.State}}</td><td class="num">{{.Epsilon}}</td><td>{{.Created}}</td><td>{{.Error}}</td></tr>
{{end}}</table>{{else}}<p>No job yet.</p>{{end}}

<h2>What each study found</h2>
<p>True outcome: {{.Outcome}}; rank 1 is the highest of {{.RankedAmong}} rows. The ledger keeps answers per identity, not per study.</p>
{{range .Studies}}<h3>{{.Identity}}</h3>
<p>{{.Answered}} rows answered, {{.Projections}} projections; best true outcome: row {{.Best}} = {{.BestTrue}}, rank {{.BestRank}}; rows in the top 1%: {{.TopOnePercent}}.</p>
{{if .Rows}}<table><tr><th>order</th><th>row</th><th>true outcome</th><th>rank</th><th>percentile</th><th>answer released</th><th>answered at (UTC)</th></tr>
{{range .Rows}}<tr><td class="num">{{.Order}}</td><td class="num">{{.Row}}</td><td class="num">{{.True}}</td><td class="num">{{.Rank}}</td><td class="num">{{.Percentile}}</td><td class="num">{{.Answer}}</td><td>{{.Time}}</td></tr>
{{end}}</table>{{end}}
{{if .More}}<p>{{.More}} more rows: curator results lists them all.</p>{{end}}
{{else}}<p>No identity has been answered yet.</p>{{end}}
</body></html>
`))
