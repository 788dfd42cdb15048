package tuning

import (
	"math"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/ledger"
)

// TestKusnerWholePatient: a Kusner job trains on its training part with no mechanism,
// so its whole-patient figure is not bounded unless the operator declared that part
// consented, when it is the validation part's (ε, δ).
func TestKusnerWholePatient(t *testing.T) {
	k := jobs.KusnerSpec{Algorithm: 1, Space: grid, Iterations: 10, Epsilon: 1, Delta: 1e-3}
	for _, consented := range []bool{false, true} {
		r := breastCancerWith(t, func(c *Config) { c.TrainingConsented = consented })
		plan, err := r.Plan(jobs.Spec{Kusner: &k})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case plan.Patient == nil:
			t.Errorf("consented %v: Kusner plan states no whole-patient cost", consented)
		case !consented && (!plan.Patient.Unbounded || !strings.Contains(plan.Guarantee, "Whole patient: NOT BOUNDED")):
			t.Errorf("Kusner whole patient without the declaration = %+v, guarantee %q; want not bounded, said so", *plan.Patient, plan.Guarantee)
		case consented && (*plan.Patient != ledger.PatientCost{Epsilon: plan.Cost.Epsilon, Delta: plan.Cost.Delta} || !strings.Contains(plan.Guarantee, "declared them consented")):
			t.Errorf("Kusner whole patient with the declaration = %+v, want the job's cost %+v", *plan.Patient, plan.Cost)
		}
	}
}

// TestDPHyPOWholePatient pins the built-in learner's whole-patient figure to its
// accountant computed by hand: the runs' curve for two add/remove steps (the weak
// triangle inequality) through Theorem 1 and the improved conversion at the job's δ.
// It lies between the job's own ε and group privacy's 2ε, and keeps the job's δ where
// group privacy would multiply it by 1 + e^ε.
func TestDPHyPOWholePatient(t *testing.T) {
	r := breastCancer(t)
	s := dphypoSpec()
	plan, err := r.Plan(jobs.Spec{DPHyPO: &s})
	if err != nil {
		t.Fatal(err)
	}
	n, m := float64(r.train.N), float64(r.val.N)
	steps := 3 * int(math.Ceil(n/64))
	orders := dpsgdOrders()
	sgd, _ := dp.SubsampledGaussianRDP(orders, 64/n, 1, steps)
	score, _ := dp.GaussianRDP(orders, 1/m, 2/m)
	base, _ := sgd.Compose(score)
	two, err := base.GroupOfTwo()
	if err != nil {
		t.Fatal(err)
	}
	total, _ := dp.DPHyPORDP(two, two, 1, 0.2, 2, 0.75)
	want, _, _ := total.ToDPImproved(1e-5)
	p := plan.Patient
	if p == nil || p.Unbounded || math.Abs(p.Epsilon-want) > 1e-12 || p.Delta != 1e-5 {
		t.Fatalf("DP-HyPO whole patient = %+v, want (%g, 1e-5)", p, want)
	}
	if !(p.Epsilon > plan.Cost.Epsilon && p.Epsilon < 2*plan.Cost.Epsilon) {
		t.Errorf("DP-HyPO whole patient ε %g for a job of ε %g: want between ε and 2ε", p.Epsilon, plan.Cost.Epsilon)
	}
	if !strings.Contains(plan.Guarantee, "Whole patient: ε=") || !strings.Contains(plan.Guarantee, "two add/remove steps") {
		t.Errorf("DP-HyPO guarantee %q does not state its whole-patient figure", plan.Guarantee)
	}
}

// TestDPHyPOEvaluatorWholePatient: an external evaluator's declared relation decides the
// whole-patient figure.
func TestDPHyPOEvaluatorWholePatient(t *testing.T) {
	for _, consented := range []bool{false, true} {
		r := breastCancerWith(t, func(c *Config) {
			c.TrainingConsented = consented
			c.Evaluators = []Evaluator{
				{Name: "plain", Command: []string{"/bin/true"}, Timeout: 1e9, Epsilon: 0.5},
				{Name: "val", Command: []string{"/bin/true"}, Timeout: 1e9, Epsilon: 0.5, Relation: ledger.RelationValidationRecord},
				{Name: "rec", Command: []string{"/bin/true"}, Timeout: 1e9, Epsilon: 0.5, Relation: ledger.RelationRecord},
				{Name: "unit", Command: []string{"/bin/true"}, Timeout: 1e9, Epsilon: 0.5, Relation: ledger.RelationFeatureUnit},
			}
		})
		for _, ev := range []string{"plain", "val", "rec", "unit"} {
			s := jobs.DPHyPOSpec{Space: []hparam.Axis{{Name: "depth", Kind: hparam.AxisList, Values: []float64{1, 2}}},
				Theta: 1, Gamma: 0.1, CMax: 2, CMin: 0.75, Tau: 0.1, Beta: 1, Delta: 1e-5, Evaluator: ev}
			plan, err := r.Plan(jobs.Spec{DPHyPO: &s})
			if err != nil {
				t.Fatal(err)
			}
			p := plan.Patient
			cost := ledger.PatientCost{Epsilon: plan.Cost.Epsilon, Delta: plan.Cost.Delta}
			var ok bool
			switch ev {
			case "plain": // pure 0.5 per run: Theorem 2 at 2 × 0.5 beats the curve
				pe, _ := dp.DPHyPOPure(1, 1, 2, 0.75)
				ok = *p == ledger.PatientCost{Epsilon: pe}
			case "val":
				ok = consented && *p == cost || !consented && p.Unbounded
			case "rec":
				ok = *p == cost
			case "unit":
				ok = p.Unbounded
			}
			if !ok {
				t.Errorf("consented %v, evaluator %s: whole patient %+v (cost %+v)", consented, ev, *p, plan.Cost)
			}
		}
	}
}

// TestDPHyPOPrivateScalingBounds: bounds that are the curator's private estimate are
// not called the operator's public bounds.
func TestDPHyPOPrivateScalingBounds(t *testing.T) {
	r := breastCancerWith(t, func(c *Config) { c.FeatureBoundsEpsilon = 0.3 })
	s := dphypoSpec()
	plan, err := r.Plan(jobs.Spec{DPHyPO: &s})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan.Guarantee, "public") || !strings.Contains(plan.Guarantee, "estimated privately from all its records for its scaling (ε_s=0.3") {
		t.Errorf("DP-HyPO guarantee under private scaling bounds = %q; want the private estimate named, no public bounds", plan.Guarantee)
	}
}
