package tuning

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/learner"
)

// threeClasses is a small data set whose text label has three public categories in its
// schema; the classes are separable by x1 and x2.
func threeClasses(t *testing.T, classes int) (*Runner, error) {
	t.Helper()
	sch, err := dataset.ParseSchema(strings.NewReader("column,lower,upper,categories\nx1,0,1,\nx2,0,1,\nkind,,,red|green|blue\n"), "kinds.schema.csv")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("x1,x2,kind\n")
	for i := range 90 {
		u := float64(i%30) / 30
		switch i % 3 {
		case 0:
			b.WriteString("0.1," + ftoa(u) + ",red\n")
		case 1:
			b.WriteString("0.9," + ftoa(u) + ",green\n")
		default:
			b.WriteString(ftoa(u) + ",0.95,blue\n")
		}
	}
	raw, err := dataset.ParseRaw(strings.NewReader(b.String()), "kinds.csv", dataset.Options{Target: "kind", Scaling: dataset.Scaling{Mode: dataset.ScaleSchema, Schema: sch}})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := raw.Scale(dataset.Scaling{Mode: dataset.ScaleSchema, Schema: sch})
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Dataset: ds, ValidationFraction: 0.3, SplitSeed: 1, Classes: classes,
		FeatureBounds: []learner.Bounds{{Lower: 0, Upper: 1}, {Lower: 0, Upper: 1}}})
}

func ftoa(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// TestTargetClasses: the number of classes comes from public declarations only — the
// schema's categories of the target (three here), the schema's bounds [0, K−1] (ten for
// the digits), or the operator — and labels outside them refuse the runner.
func TestTargetClasses(t *testing.T) {
	r, err := threeClasses(t, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Classes() != 3 {
		t.Errorf("Classes() = %d from the schema's three categories, want 3", r.Classes())
	}
	if r := digitsRunner(t, 0); r.Classes() != 10 {
		t.Errorf("digits: Classes() = %d, want 10 from the schema's target bounds [0, 9]", r.Classes())
	}
	// The operator declares two classes where the labels run to 2: refused, naming the
	// classes' source and not the data.
	if _, err := threeClasses(t, 2); err == nil || !strings.Contains(err.Error(), "2 classes (set by the operator)") {
		t.Errorf("two declared classes over labels 0…2: %v, want refused", err)
	}

	// DP-HyPO plans and runs with softmax regression; the guarantee says what changed.
	spec := jobs.DPHyPOSpec{Space: []hparam.Axis{{Name: "learning_rate", Kind: hparam.AxisList, Values: []float64{0.5, 2}}},
		Theta: 1, Gamma: 0.5, CMax: 1.1, CMin: 0.9, Tau: 0.1, Beta: 1, Delta: 1e-5,
		DPSGD: jobs.DPSGD{ClipNorm: 1, NoiseMultiplier: 0.5, ScoreNoiseMultiplier: 1, Epochs: 20, BatchSize: 8, L2: 1e-3}}
	plan, err := r.Plan(jobs.Spec{DPHyPO: &spec})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.Guarantee, "softmax regression over the 3 public classes") || !strings.Contains(plan.Guarantee, "Nothing in the guarantee changes") {
		t.Errorf("guarantee %q does not state the multi-class learner", plan.Guarantee)
	}
	res, err := r.Run(context.Background(), jobs.Spec{DPHyPO: &spec}, func(jobs.Progress) {})
	if err != nil || !res.HasHyperparameters || res.Trace == nil || len(res.Trace.Steps) == 0 {
		t.Fatalf("Run = %+v, %v; want a release and an operator trace", res, err)
	}
	// Kusner: Algorithm 1 on softmax accuracy plans; Algorithm 3 (binary Lipschitz
	// bounds) is refused.
	ks := jobs.KusnerSpec{Algorithm: 1, Space: []hparam.Axis{{Name: "lambda", Kind: hparam.AxisLog, Low: 1e-3, High: 1, Count: 4}},
		Iterations: 3, Epsilon: 4, Delta: 1e-3}
	if _, err := r.Plan(jobs.Spec{Kusner: &ks}); err != nil {
		t.Errorf("Kusner Algorithm 1 over three classes: %v", err)
	}
	ks.Algorithm = 3
	if _, err := r.Plan(jobs.Spec{Kusner: &ks}); err == nil || !strings.Contains(err.Error(), "binary logistic regression") {
		t.Errorf("Kusner Algorithm 3 over three classes: %v, want refused", err)
	}
}
