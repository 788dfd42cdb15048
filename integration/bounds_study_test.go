package integration

import (
	"context"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/modeler"
)

// BenchmarkBoundsStudy measures what the private bounds cost a first study on the
// defaults (docs/EXPERIMENTS.md, "Private bounds"): on the shipped diabetes data, the
// top-1% hit rate of studies against a curator started as a new user would start it —
// --budget-epsilon 10, the default δ budget 1e-6 with the dataset cap equal to it,
// Laplace answers at ε_out = 1, the Gaussian projection — once without a schema (the
// feature bounds and the answers' range estimated privately: ε_s = 1, δ_s = 1e-7) and
// once with the shipped schema. Every run starts a new curator on a new state (so a new
// private estimate) and runs one study through gRPC with the modeler's defaults but
// r = 10, ε = 1, T = 50 and δ the most the budget allows (1e-6 with the schema, 9e-7
// without: the estimate took 1e-7 of the dataset's δ cap). A run is a hit when a row it
// queried has a TRUE progression in the top 1% (≥ its 99th percentile, 5 patients), as
// in TestDiabetesTopOnePercent.
//
// PRIVBO_BOUNDS_STUDY_RUNS sets the runs per arm (default 20); the rates are reported
// as metrics and logged with their binomial standard errors, with the exact rate of
// random search. PRIVBO_BOUNDS_STUDY_SETTINGS=R,EPSILON,DELTA,T,BUDGET_DELTA replaces
// the study's r, ε, δ (the same in both arms) and T and the curator's δ budget, for
// instance 5,7.389,1e-4,40,1e-3 (docs/EXPERIMENTS.md's usual diabetes study, with the
// README's δ budget). Run it with
//
//	PRIVBO_BOUNDS_STUDY_RUNS=200 go test -run '^$' -bench BoundsStudy -benchtime 1x -timeout 4h -v ./integration/
func BenchmarkBoundsStudy(b *testing.B) {
	runs := 20
	if s := os.Getenv("PRIVBO_BOUNDS_STUDY_RUNS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("PRIVBO_BOUNDS_STUDY_RUNS=%q: want a positive integer", s)
		}
		runs = v
	}
	r, eps, iterations, budgetDelta := 10, 1.0, 50, config.DefaultBudgetDelta
	deltas := map[string]float64{"no schema": 9e-7, "schema": 1e-6}
	if s := os.Getenv("PRIVBO_BOUNDS_STUDY_SETTINGS"); s != "" {
		var delta float64
		if _, err := fmt.Sscanf(strings.ReplaceAll(s, ",", " "), "%d %g %g %d %g", &r, &eps, &delta, &iterations, &budgetDelta); err != nil {
			b.Fatalf("PRIVBO_BOUNDS_STUDY_SETTINGS=%q: want R,EPSILON,DELTA,T,BUDGET_DELTA: %v", s, err)
		}
		deltas["no schema"], deltas["schema"] = delta, delta
	}
	raw, err := dataset.LoadRaw(diabetesPath, dataset.Options{Target: "progression"})
	if err != nil {
		b.Fatal(err)
	}
	thr := topOnePercentThreshold(raw.Y)
	schema, err := dataset.ParseScaling("schema:" + diabetesSchema)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		for _, arm := range []struct {
			name    string
			scaling dataset.Scaling
		}{
			{"no schema", dataset.Scaling{}},
			{"schema", schema},
		} {
			hits := 0
			var widths, uppers []float64
			for run := range runs {
				cur := curatortest.StartConfig(b, curatortest.Options{
					Scaling: arm.scaling, DatasetID: fmt.Sprintf("diabetes-%d", run), Budget: ledger.Cost{Epsilon: 10, Delta: budgetDelta},
				}.Config(b))
				out := cur.Server.OutputPrivacy()
				widths, uppers = append(widths, out.Upper-out.Lower), append(uppers, out.Upper)
				cfg := modeler.Config{R: r, Epsilon: eps, Delta: deltas[arm.name], Iterations: iterations, InitialIndex: -1}
				res, err := modeler.Run(context.Background(), curatorclient.New(cur.Client(b, "vendor")), cfg)
				if err != nil {
					b.Fatalf("%s, run %d: %v", arm.name, run, err)
				}
				for _, i := range res.Queried {
					if raw.Y[i] >= thr {
						hits++
						break
					}
				}
				cur.Stop(b)
			}
			p := float64(hits) / float64(runs)
			sort.Float64s(widths)
			sort.Float64s(uppers)
			k := 0
			for _, y := range raw.Y {
				if y >= thr {
					k++
				}
			}
			b.Logf("%s (r %d, ε %g, δ %g, T %d): top-1%% hit rate %d/%d = %.3f ± %.3f (binomial s.e.; random search %.3f); answers' range width median %.0f (min %.0f, max %.0f), upper end median %.0f",
				arm.name, r, eps, deltas[arm.name], iterations, hits, runs, p, math.Sqrt(p*(1-p)/float64(runs)), hitProbabilityRandom(raw.N, k, iterations),
				widths[len(widths)/2], widths[0], widths[len(widths)-1], uppers[len(uppers)/2])
			b.ReportMetric(p, "hit-rate-"+map[string]string{"no schema": "private", "schema": "schema"}[arm.name])
		}
	}
}
