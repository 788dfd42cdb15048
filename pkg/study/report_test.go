package study

import (
	"bytes"
	"encoding/base64"
	"gonum.org/v1/plot/vg"
	"html"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/noise"
)

func TestWriteReport(t *testing.T) {
	known := 50.0
	st := &Study{Name: "rep", Settings: testSettings, Connection: testConn, Release: &testRelease, InitialIndex: 3, Done: true,
		Budget: Budget{Identity: "acme", EpsilonLimit: 10, DeltaLimit: 1e-3, EpsilonSpent: 7.42, DeltaSpent: 1e-4}}
	obs := []Observation{
		{Iteration: 1, Round: 1, Index: 3, Value: 10},
		{Iteration: 2, Round: 2, Index: 0, Value: 40},
		{Iteration: 3, Round: 2, Index: 1, Value: 25},
		{Iteration: 4, Round: 3, Index: 2, Value: 45},
	}
	// Laplace answers at ε = 0.01 on [0, 400]: noise sd √2·40000.
	rec := &Recommendation{Index: 0, Mean: 38.5, SD: 4.25, AnswerNoiseSD: 56568.5}
	for _, tc := range []struct {
		name      string
		knownBest *float64
		regret    bool
	}{{"no truth", nil, false}, {"simulation", &known, true}} {
		t.Run(tc.name, func(t *testing.T) {
			st.KnownBest = tc.knownBest
			dir := t.TempDir()
			path, err := WriteReport(st, obs, rec, dir)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			page := string(b)
			// The recommended row leads, with its posterior mean ± sd and the answers'
			// noise; the highest answer follows, labelled a noisy answer.
			plain := html.UnescapeString(page)
			order := []string{`recommended row (highest posterior mean)</div><div class="v">0</div>`,
				`posterior mean ± sd</div><div class="v">38.5 ± 4.25</div>`,
				`answer noise sd, on [0, 400]</div><div class="v">5.66e+04</div>`,
				`highest noisy answer</div><div class="v">45</div>`, `row of the highest noisy answer</div><div class="v">2</div>`,
				`Row <b>0</b> has the highest posterior mean among the 4 queried rows (maximize):`,
				"Answer noise: sd 5.66e+04 per answer (laplace mechanism) against the target's range [0, 400]: 141 times its width; a single answer says little about its row",
				"<h2>Highest answers (noisy answers, not the rows' values)</h2>", "<th>noisy answer</th>"}
			at := -1
			for _, want := range order {
				i := strings.Index(plain, want)
				if i < 0 {
					t.Errorf("report lacks %q", want)
					continue
				}
				if i < at {
					t.Errorf("report shows %q before what should precede it", want)
				}
				at = i
			}
			if strings.Contains(plain, "best value") || strings.Contains(plain, "best row") {
				t.Error("report still calls a noisy answer the best value or best row")
			}
			// The highest answers, highest first: rows 2, 0, 1, 3.
			rows := regexp.MustCompile(`<tr><td class="num">(\d+)</td><td class="num">(\d+)</td><td class="num">([0-9.]+)</td>`).FindAllStringSubmatch(page, -1)
			var top []string
			for _, r := range rows[:4] {
				top = append(top, r[2]+"="+r[3])
			}
			if got, want := strings.Join(top, " "), "2=45 0=40 1=25 3=10"; got != want {
				t.Errorf("best records = %s, want %s", got, want)
			}
			// Privacy: the release (7.38906, 1e-4) and the answers' one charge of 0.01
			// (parallel composition over the 4 rows).
			for _, want := range []string{"rel-1: (ε, δ) = (7.38906, 0.0001)", "so they cost at most (0.01, 0) together, charged once per identity",
				"(ε, δ) = (7.39906, 0.0001) under the feature-unit neighbour relation (the scaled features of one record moved by one protected unit), by basic composition of the projection and the answers",
				"spent (ε, δ) = (7.42, 0.0001) of (10, 0.001)"} {
				if !strings.Contains(page, want) {
					t.Errorf("report lacks %q", want)
				}
			}
			if strings.Contains(page, "<link") || strings.Contains(page, "<script") || strings.Contains(page, "http://") || strings.Contains(page, "https://") {
				t.Error("report refers to external resources; it must be self-contained")
			}
			uris := regexp.MustCompile(`src="data:image/png;base64,([^"]+)"`).FindAllStringSubmatch(page, -1)
			wantImgs := 1
			if tc.regret {
				wantImgs = 2
			}
			if len(uris) != wantImgs {
				t.Fatalf("report embeds %d PNGs, want %d", len(uris), wantImgs)
			}
			for _, u := range uris {
				// html/template writes '+' as an entity; a browser decodes it.
				raw, err := base64.StdEncoding.DecodeString(html.UnescapeString(u[1]))
				if err != nil {
					t.Fatal(err)
				}
				img, err := png.Decode(bytes.NewReader(raw))
				if err != nil {
					t.Fatalf("embedded PNG does not decode: %v", err)
				}
				if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 150 {
					t.Errorf("embedded PNG is %v, want at least 300 × 150", b)
				}
			}
			_, err = os.Stat(filepath.Join(dir, ReportRegret))
			if (err == nil) != tc.regret {
				t.Errorf("regret.png exists = %v, want %v", err == nil, tc.regret)
			}
			if tc.regret && !strings.Contains(page, `<div class="k">simple regret (of the highest noisy answer)</div><div class="v">5</div>`) {
				t.Error("report does not show the final simple regret 50 − 45 = 5")
			}
			if _, err := os.Stat(filepath.Join(dir, ReportValues)); err != nil {
				t.Errorf("values.png: %v", err)
			}
		})
	}
}

// TestReportExactAnswers: a study whose answers were exact shows them as having no
// guarantee (ε = ∞) and never bounds the study by the projection's (ε, δ).
func TestReportExactAnswers(t *testing.T) {
	rel := testRelease
	rel.OutputPrivacy = OutputPrivacy{Mechanism: "none", Noise: noise.None, Guarantee: "no guarantee (ε = ∞): exact answers (output privacy none, the operator's explicit choice)"}
	st := &Study{Name: "exact", Settings: testSettings, Connection: testConn, Release: &rel, InitialIndex: 0}
	obs := []Observation{{Iteration: 1, Round: 1, Index: 0, Value: 10}, {Iteration: 2, Round: 2, Index: 1, Value: 12}}
	rows := privacyRows(st, obs)
	got := map[string]string{}
	for _, r := range rows {
		got[r[0]] = r[1]
	}
	want := map[string]string{
		"answers":            "2 queries, 2 distinct rows, released exactly (output privacy none): no guarantee (ε = ∞)",
		"answers' guarantee": rel.OutputPrivacy.Guarantee,
		"this study":         "no guarantee (ε = ∞) for the answered rows: their answers are exact; only the projection release has a stated (ε, δ) = (7.38906, 0.0001)",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["this study, at most"]; ok {
		t.Errorf("a study with exact answers is bounded by %q; it has no guarantee", got["this study, at most"])
	}
	path, err := WriteReport(st, obs, &Recommendation{Index: 1, Mean: 12, SD: 0.03}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	page := html.UnescapeString(string(b))
	if !strings.Contains(page, want["answers"]) || strings.Contains(page, "at most (") || strings.Contains(page, "(0, 0)") {
		t.Errorf("report of a study with exact answers states a bound:\n%s", page)
	}
	// Exact answers are no noisy answers: the best one is the highest answer.
	for _, want := range []string{`<div class="k">highest answer</div><div class="v">12</div>`, "Answer noise: none: the answers are exact",
		"<h2>Highest answers</h2>", "Row <b>1</b> has the highest posterior mean"} {
		if !strings.Contains(page, want) {
			t.Errorf("report of exact answers lacks %q", want)
		}
	}
	if strings.Contains(page, "noisy") || strings.Contains(page, "answer noise sd") {
		t.Error("report of exact answers speaks of noisy answers")
	}
}

func TestSettingRowsFitEvery(t *testing.T) {
	for _, tc := range []struct {
		k    int
		want string
	}{{0, "0 (fixed hyperparameters)"}, {5, "5 (observations between maximum-likelihood refits)"}} {
		set := testSettings
		set.FitEvery = tc.k
		got := ""
		for _, r := range settingRows(set) {
			if r[0] == "fit-every" {
				got = r[1]
			}
		}
		if got != tc.want {
			t.Errorf("settingRows(fit-every %d) shows %q, want %q", tc.k, got, tc.want)
		}
	}
}

// TestReportWholePatient: the report shows the projection's neighbour relation and the
// whole-patient sentence of its guarantee, on its own row and in the page.
func TestReportWholePatient(t *testing.T) {
	whole := "replacing one patient's record by any other moves its scaled row by at most 50 units (the clip diameter), " +
		"so this release is (ε=3590, δ=0.0001)-DP under the record neighbour relation (the Gaussian mechanism's guarantee at that distance, Canonne, Kamath & Steinke 2020, Theorem 14); " +
		"at δ=0.0001 by public distance, 1 unit: ε=7.39; 2: ε=17.9; 5: ε=65.2; 10: ε=197; whole record (50 units): ε=3590"
	rel := testRelease
	rel.Relation = "feature-unit"
	rel.Guarantee = "(ε=7.38906, δ=0.0001)-DP under the feature-unit neighbour relation (…): mechanism gaussian. One protected unit: UNIT. Whole patient: " + whole + "."
	st := &Study{Name: "whole", Settings: testSettings, Connection: testConn, Release: &rel, InitialIndex: 0}
	got := map[string]string{}
	for _, r := range privacyRows(st, nil) {
		got[r[0]] = r[1]
	}
	if want := "feature-unit (neighbours differ in one record's scaled feature vector by at most one protected unit)"; got["projection relation"] != want {
		t.Errorf("projection relation = %q, want %q", got["projection relation"], want)
	}
	if got["whole patient"] != whole {
		t.Errorf("whole patient\n got: %q\nwant: %q", got["whole patient"], whole)
	}
	// A sentence after it is not part of it; a guarantee without one shows no row.
	rel.Guarantee = "x. Whole patient: no guarantee (the scaling maxnorm-nonprivate uses the data's own statistics). Query answers: y."
	if w := wholePatient(rel.Guarantee); w != "no guarantee (the scaling maxnorm-nonprivate uses the data's own statistics)" {
		t.Errorf("wholePatient = %q", w)
	}
	rel.Guarantee, rel.Relation = "(7.39, 1e-4)-DP", ""
	for _, r := range privacyRows(st, nil) {
		if r[0] == "whole patient" || r[0] == "projection relation" {
			t.Errorf("row %q = %q for a guarantee that states neither", r[0], r[1])
		}
	}
	rel.Relation = "feature-unit"
	rel.Guarantee = "g. Whole patient: " + whole + "."
	path, err := WriteReport(st, nil, nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if page := html.UnescapeString(string(b)); !strings.Contains(page, whole) || !strings.Contains(page, "whole patient") {
		t.Errorf("report page lacks the whole-patient row")
	}
}

// TestReportProtectedUnitOnce: the protected unit's paragraph is in the report once:
// on its own row only when the guarantee does not already state it.
func TestReportProtectedUnitOnce(t *testing.T) {
	unit := "Neighbouring datasets differ in one record's feature vector by at most 1 in Euclidean norm after scaling."
	rel := testRelease
	rel.ProtectedUnit = unit
	st := &Study{Name: "unit", Settings: testSettings, Connection: testConn, Release: &rel, InitialIndex: 0}
	for _, g := range []string{
		"(ε=1, δ=1e-05)-DP under the feature-unit neighbour relation: mechanism gaussian. One protected unit: " + unit,
		"(ε=1, δ=1e-05)-DP under the feature-unit neighbour relation: mechanism gaussian.",
	} {
		rel.Guarantee = g
		n := 0
		for _, r := range privacyRows(st, nil) {
			n += strings.Count(r[1], unit)
		}
		if n != 1 {
			t.Errorf("guarantee %q: the protected unit appears %d times in the report's rows, want once", g, n)
		}
	}
}

// TestSettingRowsDefaults checks that settings whose stored value is the empty default
// read as what they mean, never as an empty cell.
func TestSettingRowsDefaults(t *testing.T) {
	rows := map[string]string{}
	for _, r := range settingRows(testSettings) {
		rows[r[0]] = r[1]
	}
	if !strings.HasPrefix(rows["projection-noise"], "model") || rows["direction"] != "maximize" {
		t.Errorf("projection-noise %q, direction %q; want the default model and maximize", rows["projection-noise"], rows["direction"])
	}
	for k, v := range rows {
		if v == "" && k != "label" {
			t.Errorf("setting %s shows an empty value", k)
		}
	}
}

// TestReportWholePatientFirst: with the release's whole-patient figure as the curator
// recorded it, the privacy section opens with what the study cost a whole patient —
// the projection's figure plus the answers' — and says why when it is not bounded.
func TestReportWholePatientFirst(t *testing.T) {
	rel := testRelease
	rel.WholePatient = &WholePatient{Bounded: true, Epsilon: 133.6, Delta: 1e-5}
	rel.OutputPrivacy = OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 1, Lower: 0, Upper: 400}
	st := &Study{Name: "wp", Settings: testSettings, Connection: testConn, Release: &rel, InitialIndex: 0}
	obs := []Observation{{Iteration: 1, Round: 1, Index: 0, Value: 10}}
	rows := privacyRows(st, obs)
	want := "(ε, δ) = (134.6, 1e-05) for replacing one patient's record by any other (the record neighbour relation): the projection's (133.6, 1e-05), " +
		"by group privacy at the clip diameter, plus the answers' (1, 0), by basic composition"
	if rows[0][0] != "whole patient, this study" || rows[0][1] != want {
		t.Errorf("first privacy row = %q: %q; want %q: %q", rows[0][0], rows[0][1], "whole patient, this study", want)
	}
	for _, tc := range []struct {
		name string
		edit func(r *Release)
		want string
	}{
		{"unbounded projection", func(r *Release) { r.WholePatient = &WholePatient{} }, "NOT BOUNDED: the projection has no finite guarantee"},
		{"exact answers", func(r *Release) { r.OutputPrivacy = OutputPrivacy{Mechanism: "none", Noise: noise.None} }, "NOT BOUNDED for the answered rows"},
		{"replayed", func(r *Release) { r.Replayed = true }, "(ε, δ) = (1, 0) for replacing one patient's record"},
	} {
		r := rel
		tc.edit(&r)
		st.Release = &r
		if rows := privacyRows(st, obs); rows[0][0] != "whole patient, this study" || !strings.Contains(rows[0][1], tc.want) {
			t.Errorf("%s: first privacy row %q", tc.name, rows[0])
		}
	}
	// A curator that did not state it: no such row.
	r := rel
	r.WholePatient = nil
	st.Release = &r
	for _, row := range privacyRows(st, obs) {
		if row[0] == "whole patient, this study" {
			t.Errorf("a release without a recorded whole-patient figure shows %q", row[1])
		}
	}
}

// TestValuesPlotLeadsWithRecommendation renders the values plot as SVG and checks its
// legend: the recommended row with its posterior mean ± sd first, then the answers and,
// for private answers, the range of the values before noise; never the best single
// answer.
func TestValuesPlotLeadsWithRecommendation(t *testing.T) {
	rel := testRelease
	rel.OutputPrivacy = OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 1, Lower: 0, Upper: 400}
	st := &Study{Name: "plot", Settings: testSettings, Connection: testConn, Release: &rel}
	obs := []Observation{{Iteration: 1, Round: 1, Index: 3, Value: 900}, {Iteration: 2, Round: 2, Index: 7, Value: -300}, {Iteration: 3, Round: 3, Index: 5, Value: 120}}
	svg := func(rec *Recommendation) string {
		t.Helper()
		p, err := valuesPlot(st, obs, rec)
		if err != nil {
			t.Fatal(err)
		}
		w, err := p.WriterTo(7*vg.Inch, 4*vg.Inch, "svg")
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if _, err := w.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		return html.UnescapeString(b.String())
	}
	got := svg(&Recommendation{Index: 7, Mean: 210.4, SD: 31.27})
	at := -1
	for _, want := range []string{"recommended row 7: posterior mean 210.4 ± 31.3", "each answer", "range of the values, before noise: [0, 400]"} {
		i := strings.Index(got, want)
		if i <= at {
			t.Errorf("the plot's legend lacks %q after the entries before it", want)
		}
		at = max(at, i)
	}
	if strings.Contains(got, "best answer so far") {
		t.Error("the plot shows the best single answer beside the recommendation")
	}
	if got := svg(nil); !strings.Contains(got, "each answer") || strings.Contains(got, "recommended row") {
		t.Error("without a recommendation the plot does not show the answers alone")
	}
}
