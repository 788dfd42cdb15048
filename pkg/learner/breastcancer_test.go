package learner

import (
	"context"
	"testing"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp/dptest"
)

// breastCancerPath is the Wisconsin diagnostic breast-cancer data (569 rows,
// 30 features, label column benign; see examples/data/README.md).
const breastCancerPath = "../../examples/data/breast_cancer.csv"

// breastCancerBounds are public per-feature ranges of the 30 features, in
// the file's column order, written here by hand, not computed from the data:
// the summary table (minimum, maximum) of the Wisconsin diagnostic data's
// documentation (UCI wdbc.names; scikit-learn's load_breast_cancer
// description) rounded outward to round numbers, with every lower bound 0
// (each feature is a non-negative length, area, grey-level spread or
// shape ratio of the imaged nuclei). Radius ≤ 40 pixels gives perimeter
// ≤ 2π·40 ≈ 251 → 300 and area ≤ π·40² ≈ 5027 → 5000.
var breastCancerBounds = []Bounds{
	// mean: radius, texture, perimeter, area, smoothness, compactness,
	// concavity, concave points, symmetry, fractal dimension
	{0, 40}, {0, 60}, {0, 300}, {0, 5000}, {0, 0.25}, {0, 1.2}, {0, 1.5}, {0, 0.35}, {0, 0.7}, {0, 0.25},
	// standard error of the same ten
	{0, 3}, {0, 5}, {0, 25}, {0, 600}, {0, 0.05}, {0, 0.15}, {0, 0.5}, {0, 0.1}, {0, 0.1}, {0, 0.05},
	// worst (mean of the three largest) of the same ten
	{0, 40}, {0, 60}, {0, 300}, {0, 5000}, {0, 0.25}, {0, 1.2}, {0, 1.5}, {0, 0.35}, {0, 0.7}, {0, 0.25},
}

// breastCancerRaw returns the data in raw units split 70/30 with
// SplitRandom seed 1.
func breastCancerRaw(t testing.TB) (train, val Data) {
	t.Helper()
	ds, err := dataset.LoadCSV(breastCancerPath, dataset.Options{
		Target:  "benign",
		Scaling: dataset.Scaling{Mode: dataset.ScaleNone},
	})
	if err != nil {
		t.Fatal(err)
	}
	all, err := NewData(ds.X, ds.Y, ds.N, ds.D)
	if err != nil {
		t.Fatal(err)
	}
	if all.N != 569 || all.D != 30 {
		t.Fatalf("breast_cancer.csv is %d×%d, want 569×30", all.N, all.D)
	}
	train, val, err = SplitRandom(all, 0.3, 1)
	if err != nil {
		t.Fatal(err)
	}
	return train, val
}

// breastCancer returns the data split 70/30 with SplitRandom seed 1, features
// standardised with the training part's means and standard deviations.
func breastCancer(t testing.TB) (train, val Data) {
	t.Helper()
	train, val = breastCancerRaw(t)
	s := FitStandardiser(train)
	return s.Apply(train), s.Apply(val)
}

// TestBreastCancerLogistic: L2 logistic regression on 30 standardised
// features separates benign from malignant tumours with about 97% accuracy
// (scikit-learn's LogisticRegression reaches 0.95–0.98 on random 30%
// splits); 0.93 leaves room for an unlucky split.
func TestBreastCancerLogistic(t *testing.T) {
	train, val := breastCancer(t)
	if val.N != 171 || train.N != 398 {
		t.Fatalf("split sizes %d, %d, want 398, 171", train.N, val.N)
	}
	for _, lambda := range []float64{1e-2, 1e-1} {
		m, err := TrainLogistic(context.Background(), train, lambda)
		if err != nil {
			t.Fatal(err)
		}
		if acc := Accuracy(m, val); acc < 0.93 {
			t.Errorf("validation accuracy at λ=%g = %.4f, want ≥ 0.93", lambda, acc)
		}
		t.Logf("λ=%g: validation accuracy %.4f, ramp score %.4f", lambda, Accuracy(m, val), RampScore(m, ClipRows(val, 1)))
	}
}

// TestBreastCancerDPSGD trains with the settings (learning rate 0.5,
// clipping norm 1, 10 epochs, expected batch 64, so q = 64/398 and 70
// steps).
//
// Noise-free, DP-SGD is clipped mini-batch SGD and should come within 0.04
// (7 of 171 validation rows) of the L-BFGS optimum at λ = 1e-2 (0.9825 on
// this split; noise-free DP-SGD gets 0.9766). With noise multiplier 1 the
// averaged gradient gets noise of sd 1/64 ≈ 0.016 per coordinate, small
// against the gradients early in training: over 200 seeds (dptest sources
// 1000–1199) the accuracy had mean 0.976 and minimum 0.959, so 0.85 is a
// wide margin, checked here for 5 fixed seeds.
func TestBreastCancerDPSGD(t *testing.T) {
	train, val := breastCancer(t)
	ref, err := TrainLogistic(context.Background(), train, 1e-2)
	if err != nil {
		t.Fatal(err)
	}
	refAcc := Accuracy(ref, val)
	cfg := DPSGDConfig{LearningRate: 0.5, ClipNorm: 1, Epochs: 10, ExpectedBatchSize: 64}
	if got := cfg.Steps(train.N); got != 70 {
		t.Fatalf("Steps(%d) = %d, want 10·⌈398/64⌉ = 70", train.N, got)
	}
	m, err := TrainDPSGD(context.Background(), dptest.Source(1), train, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if acc := Accuracy(m, val); acc < refAcc-0.04 {
		t.Errorf("noise-free DP-SGD accuracy = %.4f, want ≥ %.4f − 0.04 (L-BFGS)", acc, refAcc)
	}
	cfg.NoiseMultiplier = 1
	for seed := range uint64(5) {
		m, err := TrainDPSGD(context.Background(), dptest.Source(100+seed), train, cfg)
		if err != nil {
			t.Fatal(err)
		}
		acc := Accuracy(m, val)
		if acc < 0.85 {
			t.Errorf("DP-SGD (noise 1, seed %d) accuracy = %.4f, want > 0.85", seed, acc)
		}
		t.Logf("DP-SGD noise 1 seed %d: accuracy %.4f (L-BFGS %.4f)", seed, acc, refAcc)
	}
}
