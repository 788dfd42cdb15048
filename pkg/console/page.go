package console

import (
	"context"
	"fmt"
	"html/template"
	"math"
	"math/big"
	"strconv"

	"github.com/privbo/privbo/internal/figure"
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
	Patient, Limits    table
	Chart              template.HTML
	Relations          []table
	Releases, Jobs     table
	Outcome            string
	RankedAmong        int
	Studies            []table
}

// table is a titled, annotated HTML table; Mark highlights a row (over a limit).
type table struct {
	Title, Note string
	Head        []string
	Rows        []row
}

type row struct {
	Cells []cell
	Mark  bool
}

// cell is a table cell; a numeric one is right-aligned.
type cell struct {
	Text string
	Num  bool
}

func txt(s string) cell { return cell{Text: s} }
func num(s string) cell { return cell{Text: s, Num: true} }

// fig is x as every text of privbo writes a figure (figure.Text: at most 4 significant
// digits, "12340", not "1.234e+04"); inf says "not bounded".
func fig(x float64) string {
	if math.IsInf(x, 1) {
		return "not bounded"
	}
	return figure.Text(x)
}

// left is a remainder to 4 significant digits, rounded down so that it never shows
// more than a charge can spend.
func left(r *big.Rat) string {
	x, _ := r.Float64()
	if x <= 0 {
		return "0"
	}
	s := fig(x)
	if v, _ := strconv.ParseFloat(s, 64); new(big.Rat).SetFloat64(v).Cmp(r) > 0 {
		s = fig(v - math.Pow(10, math.Floor(math.Log10(x))-3))
	}
	return s
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
	p.Patient = table{Head: []string{"who", "ε", "δ", "reserved ε", "cap", "left"}}
	for _, r := range append([]ledger.PatientRow{rep.Patient.Dataset}, rep.Patient.Identities...) {
		c := r.Total.Cost()
		w, delta, capText, leftText := who(r.Identity), fig(c.Delta), "no cap", "–"
		if r.OverLimit {
			w += " (over its cap)"
		}
		if !r.Total.Bounded() {
			delta = "–"
		}
		if r.Cap.Epsilon > 0 {
			capText = "ε " + fig(r.Cap.Epsilon) + ", δ " + fig(r.Cap.Delta)
			if r.Left.Epsilon != nil {
				leftText = "ε " + left(r.Left.Epsilon) + ", δ " + left(r.Left.Delta)
			}
		}
		p.Patient.Rows = append(p.Patient.Rows, row{Mark: r.OverLimit,
			Cells: []cell{txt(w), num(fig(c.Epsilon)), num(delta), num(exact(r.Reserved.Epsilon)), txt(capText), txt(leftText)}})
	}
}

func (p *page) relations(rep ledger.Report) {
	for _, rr := range rep.Relations {
		t := table{Title: string(rr.Relation), Head: []string{"who", "charges", "spent ε", "spent δ", "reserved ε", "left ε", "left δ"}}
		for _, r := range append([]ledger.ReportRow{rr.Dataset}, rr.Identities...) {
			w := who(r.Identity)
			if r.OverLimit {
				w += " (over its limit)"
			}
			t.Rows = append(t.Rows, row{Mark: r.OverLimit, Cells: []cell{txt(w), num(strconv.Itoa(r.Charges)), num(exact(r.Spent.Epsilon)),
				num(exact(r.Spent.Delta)), num(exact(r.Reserved.Epsilon)), num(left(r.Left.Epsilon)), num(left(r.Left.Delta))}})
		}
		p.Relations = append(p.Relations, t)
	}
	if len(p.Relations) == 0 {
		p.Relations = []table{{Note: "Nothing is spent yet."}}
	}
}

func limitRows(inForce ledger.Limits, history []ledger.RecordedLimits) table {
	cost := func(c ledger.Cost) cell {
		if c.Epsilon == 0 {
			return txt("no cap")
		}
		return txt("ε " + fig(c.Epsilon) + ", δ " + fig(c.Delta))
	}
	t := table{Head: []string{"in force since (UTC)", "per identity", "dataset", "whole patient, per identity", "whole patient, dataset"}}
	add := func(since string, l ledger.Limits) {
		t.Rows = append(t.Rows, row{Cells: []cell{txt(since), cost(l.PerIdentity), cost(l.Dataset), cost(l.Patient.PerIdentity), cost(l.Patient.Dataset)}})
	}
	for _, h := range history {
		add(h.Recorded.UTC().Format(stamp), h.Limits)
	}
	if len(history) == 0 {
		add("this curator's, not recorded yet", inForce)
	}
	return t
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
	p.Releases = table{Head: []string{"time (UTC)", "identity", "kind", "relation", "ε", "δ", "whole-patient ε"}}
	n := 0
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if !isRelease(e) {
			continue
		}
		if n++; n > maxReleases {
			continue
		}
		wp := "not bounded"
		if !e.Patient.Unbounded {
			wp = fig(e.Patient.Epsilon)
		}
		p.Releases.Rows = append(p.Releases.Rows, row{Cells: []cell{txt(e.Created.UTC().Format(stamp)), txt(e.Identity), txt(e.Kind),
			txt(string(e.Relation)), num(fig(e.Cost.Epsilon)), num(fig(e.Cost.Delta)), num(wp)}})
	}
	p.Releases.Note = "No release yet."
	if n > 0 {
		p.Releases.Note = fmt.Sprintf("The latest %d of %d charged releases, newest first (an identity's answers are one charge; they are listed below).", len(p.Releases.Rows), n)
	}
}

func (p *page) jobs(js []jobs.Job) {
	for _, j := range js {
		p.Jobs.Rows = append(p.Jobs.Rows, row{Cells: []cell{txt(j.ID), txt(j.Identity), txt(j.Spec.Kind()), txt(string(j.State)),
			num(fig(j.Cost.Epsilon)), txt(j.Created.UTC().Format(stamp)), txt(j.Error)}})
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
		t := table{Title: id.Identity, Head: []string{"order", "row", "true outcome", "rank", "percentile", "answer released", "answered at (UTC)"}}
		answered, best, bestText, top := 0, 0, "no answer", 0
		for k, a := range id.Rows {
			trueText, rankText, pctText := "–", "–", "–"
			if v, ok := values[a.Index]; ok {
				rank, pct, isTop := rk.Rank(v)
				trueText, rankText, pctText = fig(v), strconv.Itoa(rank), fig(100*pct)+"%"
				if a.Pass == 0 && isTop {
					top++
				}
				if a.Pass == 0 && (best == 0 || rank < best) {
					best, bestText = rank, fmt.Sprintf("row %d = %s, rank %d", a.Index, fig(v), rank)
				}
			}
			if a.Pass == 0 {
				answered++
			}
			if k < maxRows {
				t.Rows = append(t.Rows, row{Cells: []cell{num(strconv.Itoa(k + 1)), num(strconv.Itoa(a.Index)), num(trueText), num(rankText), num(pctText),
					num(fig(a.Answer)), txt(a.Time.Format(stamp))}})
			}
		}
		t.Note = fmt.Sprintf("%d rows answered, %d projections; best true outcome: %s; rows in the top 1%%: %d.", answered, len(id.Projections), bestText, top)
		if more := len(id.Rows) - len(t.Rows); more > 0 {
			t.Note += fmt.Sprintf(" The first %d rows are listed; curator results lists all %d.", len(t.Rows), len(id.Rows))
		}
		p.Studies = append(p.Studies, t)
	}
	return nil
}

// stamp is the page's time format (UTC).
const stamp = "2006-01-02 15:04:05"

var pageTmpl = template.Must(template.New("console").Funcs(template.FuncMap{"css": func() template.CSS { return htmlstyle.CSS }}).Parse(`
{{- define "table"}}{{with .Title}}<h3>{{.}}</h3>{{end}}{{with .Note}}<p>{{.}}</p>{{end}}
{{if .Rows}}<table><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr{{if .Mark}} class="best"{{end}}>{{range .Cells}}<td{{if .Num}} class="num"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</table>{{end}}{{end -}}
<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>privbo console: {{.Dataset}}</title>
<style>{{css}}</style></head><body>
<h1>Privacy console: dataset {{.Dataset}}</h1>
<p class="sub">Read-only, for the curator's operators; generated {{.Generated}}.</p>
<p class="warn">This page shows true outcomes of the data. It releases nothing and costs no privacy budget; do not forward it.</p>
<h2>What one patient can lose</h2>
<p>Whole-patient totals: each release's (ε, δ) for replacing one patient's record by any other, added over every relation.</p>
{{template "table" .Patient}}
<h2>Spend over time</h2>
<p>The dataset's whole-patient ε after each release; a dashed line marks its cap, if any.</p>
{{.Chart}}
<h2>Budgets by neighbour relation</h2>
<p>Spent and left as a charge finds them: an identity's left is the smaller of its own and the dataset's.</p>
{{range .Relations}}{{template "table" .}}{{end}}
<h2>Limits history</h2>
{{template "table" .Limits}}
<h2>Latest releases</h2>
{{template "table" .Releases}}
<h2>Jobs</h2>
{{template "table" .Jobs}}
<h2>What each study found</h2>
<p>True outcome: {{.Outcome}}; rank 1 is the highest of {{.RankedAmong}} rows. The ledger keeps answers per identity, not per study.</p>
{{range .Studies}}{{template "table" .}}{{else}}<p>No identity has been answered yet.</p>{{end}}
</body></html>
`))
