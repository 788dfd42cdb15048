package simulate

import (
	"math"

	"github.com/privbo/privbo/internal/setting"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/projection"
)

// NewConfig returns a simulation's defaults, the one place they are written: `modeler
// simulate`'s flags take theirs from it (Config.Bind), and Config's zero-means-default
// fields take the same values. The settings a simulated study shares with `modeler run`
// take its defaults (modeler.NewConfig). Data and Synthetic are nil.
func NewConfig() Config {
	m := modeler.NewConfig()
	return Config{
		Draws: 1, Runs: 10, Iterations: m.Iterations, Batch: m.Batch, Epsilon: math.Exp(1.1), Delta: 1e-5,
		ProjectionMechanism: projection.MechanismLifted, Seed: 1, Workers: 2, OutDir: "simulation",
		GP: GPSettings{Kernel: m.Kernel, DeltaUCB: m.DeltaUCB, Raw: m.RawOutputs, FitEvery: m.FitEvery},
	}
}

// NewSyntheticConfig returns the synthetic problem's defaults (Kharkovskii et al.,
// Table 1): a 100×100 grid drawn by the Kronecker sampler.
func NewSyntheticConfig() SyntheticConfig {
	return SyntheticConfig{Grid: 100, MaxNorm: 25, SignalVariance: 1, NoiseVariance: 1e-5, Sampler: SamplerKronecker}
}

// Bind declares the settings of c, each once: its field, its name (the flag of `modeler
// simulate`), its help and its range, with c's values as defaults; those of c.Data and
// c.Synthetic when they are not nil. Config.defaults checks c against the same ranges (a
// zero field is unset), and a refusal names the flag.
func (c *Config) Bind() *setting.Set {
	leaveOut := setting.Positive.Why("leave it out for the default")
	s := setting.New(
		setting.Float(&c.Epsilon, "epsilon", setting.Positive, "ε of each projection"),
		setting.Float(&c.Delta, "delta", setting.Open01, "δ of each projection"),
		setting.String(&c.ProjectionMechanism, "projection-mechanism", "the curator's projection mechanism: lifted (the paper's) or gaussian (noise from crypto/rand: not reproducible from --seed)"),
		setting.Float(&c.Output.Epsilon, "output-epsilon", setting.Positive, "ε of each private answer (output privacy)"),
		setting.Float(&c.Output.Delta, "output-delta", setting.ZeroTo1, "δ of each private answer (gaussian output privacy only)"),
		setting.Float(&c.Output.Lower, "output-lower", setting.Finite, "public lower bound of the target, in the target column's units (required with output privacy; transformed with --log-outputs and --direction as the target)"),
		setting.Float(&c.Output.Upper, "output-upper", setting.Finite, "public upper bound of the target (required with output privacy)"),
		setting.Int(&c.Iterations, "iterations", setting.AtLeast(1), "iterations T per run (the first is the random initial row)"),
		setting.Int(&c.Runs, "runs", setting.AtLeast(1), "runs per draw and method"),
		setting.Int(&c.Batch, "batch", setting.AtLeast(1), "rows the GP methods choose per round (GP-BUCB; 1: sequential GP-UCB)"),
		setting.Int(&c.Draws, "draws", setting.AtLeast(1), "synthetic: independent function draws"),
		setting.String(&c.OutDir, "out", "output directory (regret.csv, regret.png, summary.md)"),
		setting.Uint64(&c.Seed, "seed", "seed of draws, initial rows, projections and random search (simulations are not private)"),
		setting.Int(&c.Workers, "workers", setting.AtLeast(1), "runs in parallel"),
		setting.Parsed[modeler.KernelText](&c.GP.Kernel, "kernel", nil, "GP kernel: se or matern52"),
		setting.Float(&c.GP.Lengthscale, "lengthscale", leaveOut, "GP lengthscale (default: the synthetic one, or the median distance to the mean of the candidates)"),
		setting.Float(&c.GP.SignalVariance, "signal-variance", leaveOut, "GP signal variance (default 1, or the noise rule's with output privacy)"),
		setting.Float(&c.GP.NoiseVariance, "noise-variance", leaveOut, "GP noise variance (default: synthetic σ_n², or 1e-3 for standardised data, or the noise rule's with output privacy)"),
		setting.Float(&c.GP.DeltaUCB, "delta-ucb", setting.Open01, "δ' of the β_t schedule"),
		setting.Bool(&c.GP.Raw, "raw-outputs", "do not standardise outputs (data sets)"),
		setting.Int(&c.GP.FitEvery, "fit-every", setting.AtLeast(0), "refit GP hyperparameters by maximum likelihood every K observations (0: fixed)"),
		setting.Parsed[modeler.ProjectionNoiseText](&c.GP.ProjectionNoise, "projection-noise", nil, "how po-gp-ucb's GP treats the Gaussian projection's noise: model, kernel or ignore (as modeler run)"),
	)
	if c.Data != nil {
		s = s.With(c.Data.bind()...)
	}
	if c.Synthetic != nil {
		s = s.With(
			setting.Int(&c.Synthetic.Grid, "grid", setting.AtLeast(2), "synthetic: g×g grid on [-1,1]²"),
			setting.Float(&c.Synthetic.Lengthscale, "synthetic-lengthscale", setting.Positive.Why("leave it out for 0.25 × 25"), "synthetic: lengthscale of the drawn function in scaled units (default 0.25 × 25)"),
			setting.String(&c.Synthetic.Sampler, "sampler", "synthetic: how to draw f: kronecker (exact, fast) or cholesky (n×n, slow)"),
		)
	}
	return s
}

// bind declares the settings of a data set.
func (d *DataConfig) bind() []setting.Setting {
	return []setting.Setting{
		setting.String(&d.Path, "data", "CSV or .parquet data set (the curator's file)"),
		setting.String(&d.Options.Target, "target", "target column (default: the last column)"),
		setting.Bool(&d.Minimize, "minimize", "the same as --direction minimize"),
		setting.Bool(&d.LogOutputs, "log-outputs", "take the natural log of the target (must be positive)"),
	}
}
