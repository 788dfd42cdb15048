package learner

import (
	"context"
	"testing"

	"github.com/privbo/privbo/pkg/dp/dptest"
)

// BenchmarkTrainLogisticBreastCancer: L-BFGS on 398×30 standardised rows.
func BenchmarkTrainLogisticBreastCancer(b *testing.B) {
	train, _ := breastCancer(b)
	for _, lambda := range []float64{1e-4, 1e-2, 1} {
		b.Run(formatLambda(lambda), func(b *testing.B) {
			for b.Loop() {
				if _, err := TrainLogistic(context.Background(), train, lambda); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func formatLambda(l float64) string {
	switch l {
	case 1e-4:
		return "lambda=1e-4"
	case 1e-2:
		return "lambda=1e-2"
	}
	return "lambda=1"
}

// BenchmarkTrainDPSGDBreastCancer: 10 epochs, batch 64 (70 steps) on 398×30.
func BenchmarkTrainDPSGDBreastCancer(b *testing.B) {
	train, _ := breastCancer(b)
	for _, noise := range []float64{0, 1} {
		cfg := DPSGDConfig{LearningRate: 0.5, ClipNorm: 1, NoiseMultiplier: noise, Epochs: 10, ExpectedBatchSize: 64}
		name := "noise=0"
		if noise > 0 {
			name = "noise=1"
		}
		b.Run(name, func(b *testing.B) {
			src := dptest.Source(1)
			for b.Loop() {
				if _, err := TrainDPSGD(context.Background(), src, train, cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkPoissonSample1000(b *testing.B) {
	src := dptest.Source(1)
	var batch []int
	for b.Loop() {
		var err error
		if batch, err = poissonSample(src, 1000, 64, batch[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGaussianNoise(b *testing.B) {
	src := dptest.Source(1)
	for b.Loop() {
		if _, err := gaussianNoise(src, 1); err != nil {
			b.Fatal(err)
		}
	}
}
