package console

import (
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/privbo/privbo/pkg/ledger"
)

// Chart geometry, in SVG units.
const chartW, chartH, chartL, chartR, chartT, chartB = 900, 260, 60, 20, 15, 40

// spendChart draws the dataset's whole-patient ε after each release (basic
// composition, the sum the ledger's caps bound) as a step line, with the cap as a
// dashed line when there is one (capEps > 0). Releases with no finite figure are
// counted and said below the chart. Nil without releases.
func spendChart(entries []ledger.Receipt, capEps float64) template.HTML {
	var ts []time.Time
	var ys []float64
	total, unbounded := 0.0, 0
	for _, e := range entries {
		if !isRelease(e) || e.Patient.Epsilon == 0 && !e.Patient.Unbounded {
			continue
		}
		if e.Patient.Unbounded {
			unbounded++
			continue
		}
		total += e.Patient.Epsilon
		ts, ys = append(ts, e.Created), append(ys, total)
	}
	if len(ts) == 0 {
		return ""
	}
	slices.SortStableFunc(ts, func(a, b time.Time) int { return a.Compare(b) }) // replicas' clocks: ys stays cumulative
	span := max(ts[len(ts)-1].Sub(ts[0]).Seconds(), 1)
	top := max(total, capEps) * 1.1
	x := func(t time.Time) float64 { return chartL + (chartW-chartL-chartR)*t.Sub(ts[0]).Seconds()/span }
	y := func(v float64) float64 { return chartT + (chartH-chartT-chartB)*(1-v/top) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="whole-patient epsilon over time">`, chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`,
		chartL, chartH-chartB, chartW-chartR, chartH-chartB, chartL, chartT, chartL, chartH-chartB)
	fmt.Fprintf(&b, `<path fill="none" stroke="#1f77b4" stroke-width="2" d="M%.1f %.1f`, x(ts[0]), y(0))
	for i, t := range ts {
		fmt.Fprintf(&b, ` H%.1f V%.1f`, x(t), y(ys[i]))
	}
	b.WriteString(`"/>`)
	if capEps > 0 {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d62728" stroke-dasharray="6 4"/><text x="%d" y="%.1f" font-size="12" text-anchor="end" fill="#d62728">cap ε %s</text>`,
			chartL, y(capEps), chartW-chartR, y(capEps), chartW-chartR, y(capEps)-4, fig(capEps))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" text-anchor="end">%s</text><text x="%d" y="%.1f" font-size="12" text-anchor="end">0</text>`,
		chartL-6, chartT+4, fig(top), chartL-6, y(0))
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12">%s</text><text x="%d" y="%d" font-size="12" text-anchor="end">%s</text>`,
		chartL, chartH-chartB+18, ts[0].UTC().Format("2006-01-02 15:04"), chartW-chartR, chartH-chartB+18, ts[len(ts)-1].UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12">whole-patient ε of the dataset: %s</text></svg>`, chartL+8, chartT+12, fig(total))
	if unbounded > 0 {
		fmt.Fprintf(&b, `<p class="err">%d releases have no finite whole-patient figure: the dataset's total is not bounded.</p>`, unbounded)
	}
	return template.HTML(b.String()) //nolint:gosec // numbers and fixed text only
}
