package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/privbo/privbo/internal/cli"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/gpucb"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/projection"
	"github.com/privbo/privbo/pkg/simulate"
	"github.com/privbo/privbo/pkg/study"
)

// runSimulate is `modeler simulate`: flags → simulate.Config → simulate.Run.
func runSimulate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("modeler simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg                     simulate.Config
		data, target, scaling   string
		markers                 string
		minimize, logOut, synth bool
		methods, rs             string
		grid                    int
		sampler                 string
		synthLS                 float64
		quiet                   bool
		outMech, noiseRule      string
	)
	// The settings a simulated study shares with modeler run take run's defaults.
	def := modeler.NewConfig()
	cfg.GP.Kernel = def.Kernel
	fs.StringVar(&data, "data", "", "CSV data set (the curator's file)")
	fs.StringVar(&target, "target", "", "target column (default: the last column)")
	fs.StringVar(&scaling, "scaling", "", "feature scaling as for curator serve (default: standardise to max norm 25)")
	fs.StringVar(&markers, "missing-markers", strings.Join(dataset.DefaultMissingMarkers, ","), "comma-separated cell texts read as missing, as curator serve --missing-markers")
	var direction study.Direction
	fs.Var(directionFlag(&direction), "direction", "maximize or minimize the target (as modeler run --direction)")
	fs.BoolVar(&minimize, "minimize", false, "the same as --direction minimize")
	fs.BoolVar(&logOut, "log-outputs", false, "take the natural log of the target (must be positive)")
	fs.BoolVar(&synth, "synthetic", false, "the synthetic GP experiment of Kharkovskii et al. (ICML 2020), Table 1, instead of a data set (docs/MATHS.md §2.5)")
	fs.IntVar(&grid, "grid", 100, "synthetic: g×g grid on [-1,1]²")
	fs.Float64Var(&synthLS, "synthetic-lengthscale", 0, "synthetic: lengthscale of the drawn function in scaled units (default 0.25 × 25)")
	fs.StringVar(&sampler, "sampler", simulate.SamplerKronecker, "synthetic: how to draw f: kronecker (exact, fast) or cholesky (n×n, slow)")
	fs.StringVar(&methods, "methods", "po-gp-ucb,gp-ucb,random", "methods to compare")
	fs.StringVar(&rs, "r", "10", "projection dimensions for po-gp-ucb, comma-separated")
	fs.Float64Var(&cfg.Epsilon, "epsilon", math.Exp(1.1), "ε of each projection")
	fs.Float64Var(&cfg.Delta, "delta", 1e-5, "δ of each projection")
	fs.StringVar(&cfg.ProjectionMechanism, "projection-mechanism", projection.MechanismLifted, "the curator's projection mechanism: lifted (the paper's) or gaussian (noise from crypto/rand: not reproducible from --seed)")
	fs.StringVar(&outMech, "output-privacy", answer.MechanismExact, "how the curator releases answers: none (exact), laplace or gaussian (clip to --output-lower/--output-upper, add noise; noise from crypto/rand, not reproducible from --seed)")
	fs.Float64Var(&cfg.Output.Epsilon, "output-epsilon", 0, "ε of each private answer (output privacy)")
	fs.Float64Var(&cfg.Output.Delta, "output-delta", 0, "δ of each private answer (gaussian output privacy only)")
	fs.Float64Var(&cfg.Output.Lower, "output-lower", math.NaN(), "public lower bound of the target, in the target column's units (required with output privacy; transformed with --log-outputs and --direction as the target)")
	fs.Float64Var(&cfg.Output.Upper, "output-upper", math.NaN(), "public upper bound of the target (required with output privacy)")
	fs.StringVar(&noiseRule, "noise-rule", "", "GP prior for private answers: ratio (default), public-range, standardised, or off (the exact-answer prior); --signal-variance, --noise-variance and --raw-outputs override it")
	fs.IntVar(&cfg.Iterations, "iterations", def.Iterations, "iterations T per run (the first is the random initial row)")
	fs.IntVar(&cfg.Runs, "runs", 10, "runs per draw and method")
	fs.IntVar(&cfg.Batch, "batch", def.Batch, "rows the GP methods choose per round (GP-BUCB; 1: sequential GP-UCB)")
	fs.IntVar(&cfg.Draws, "draws", 1, "synthetic: independent function draws")
	fs.StringVar(&cfg.OutDir, "out", "simulation", "output directory (regret.csv, regret.png, summary.md)")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of draws, initial rows, projections and random search (simulations are not private)")
	fs.IntVar(&cfg.Workers, "workers", 2, "runs in parallel")
	fs.Var(kernelFlag(&cfg.GP.Kernel), "kernel", "GP kernel: se or matern52")
	fs.Float64Var(&cfg.GP.Lengthscale, "lengthscale", 0, "GP lengthscale (default: the synthetic one, or the median distance to the mean of the candidates)")
	fs.Float64Var(&cfg.GP.SignalVariance, "signal-variance", 0, "GP signal variance (default 1, or the noise rule's with output privacy)")
	fs.Float64Var(&cfg.GP.NoiseVariance, "noise-variance", 0, "GP noise variance (default: synthetic σ_n², or 1e-3 for standardised data, or the noise rule's with output privacy)")
	fs.Float64Var(&cfg.GP.DeltaUCB, "delta-ucb", def.DeltaUCB, "δ' of the β_t schedule")
	fs.BoolVar(&cfg.GP.Raw, "raw-outputs", def.RawOutputs, "do not standardise outputs (data sets)")
	fs.IntVar(&cfg.GP.FitEvery, "fit-every", def.FitEvery, "refit GP hyperparameters by maximum likelihood every K observations (0: fixed)")
	fs.Var(projectionNoiseFlag(&cfg.GP.ProjectionNoise), "projection-noise", "how po-gp-ucb's GP treats the Gaussian projection's noise: model, kernel or ignore (as modeler run)")
	fs.BoolVar(&quiet, "quiet", false, "no progress lines")
	if err := cli.Parse(fs, args, stdout); err != nil {
		return err
	}
	if err := cli.CheckFlags(fs, simulateRules); err != nil {
		return err
	}
	if err := parseOutputPrivacy(&cfg, outMech, noiseRule); err != nil {
		return err
	}
	rlist, err := simulate.ParseInts(rs)
	if err != nil {
		return err
	}
	if cfg.Methods, err = simulate.ParseMethods(methods, rlist); err != nil {
		return err
	}
	switch {
	case synth && data != "":
		return errors.New("give either --data or --synthetic, not both")
	case synth:
		cfg.Synthetic = &simulate.SyntheticConfig{Grid: grid, Lengthscale: synthLS, Sampler: sampler}
	case data != "":
		sc, err := dataset.ParseScaling(scaling)
		if err != nil {
			return err
		}
		cfg.Data = &simulate.DataConfig{Path: data, Options: dataset.Options{Target: target, MissingMarkers: strings.Split(markers, ","), Scaling: sc}, Minimize: minimize || direction == study.Minimize, LogOutputs: logOut}
	default:
		return errors.New("give --data FILE or --synthetic")
	}
	if !quiet {
		cfg.Log = stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := simulate.Run(ctx, cfg)
	if err != nil {
		// The library names its settings; the person typed flags.
		return simulateFlagNames(err)
	}
	fmt.Fprintf(stdout, "%s: n = %d, d = %d, T = %d, %d draw(s) × %d runs per method, %s, %s, %v\n\n%s\nwrote %s, %s, %s\n",
		res.Problem, res.N, res.D, cfg.Iterations, cfg.Draws, cfg.Runs, cfg.ProjectionText(), res.Output, res.Duration.Round(1e6),
		simulate.MarkdownTable(res.Summary, res.Lifts), res.CSVPath, res.PNGPath, res.SummaryPath)
	return nil
}

// parseOutputPrivacy checks the output-privacy flags and fills cfg.Output and
// cfg.GP.NoiseRule. The range flags default to NaN (not given).
func parseOutputPrivacy(cfg *simulate.Config, mech, rule string) error {
	o := &cfg.Output
	given := !math.IsNaN(o.Lower) || !math.IsNaN(o.Upper)
	switch {
	case answer.IsExact(mech):
		if given || o.Epsilon != 0 || o.Delta != 0 {
			return errors.New("--output-epsilon, --output-delta, --output-lower and --output-upper need --output-privacy laplace or gaussian")
		}
		if rule != "" {
			return errors.New("--noise-rule needs --output-privacy laplace or gaussian")
		}
		*o = curator.OutputPrivacy{}
		return nil
	case !answer.Known(mech):
		return fmt.Errorf("--output-privacy %q: want %s", mech, answer.NamesText())
	}
	o.Mechanism = mech
	switch {
	case math.IsNaN(o.Lower) || math.IsNaN(o.Upper):
		return fmt.Errorf("--output-privacy %s needs the public target range: --output-lower and --output-upper", mech)
	case math.IsInf(o.Lower, 0) || math.IsInf(o.Upper, 0) || !(o.Lower < o.Upper):
		return fmt.Errorf("--output-lower %g and --output-upper %g: want finite bounds with lower < upper", o.Lower, o.Upper)
	case !(o.Epsilon > 0) || math.IsInf(o.Epsilon, 0):
		return fmt.Errorf("--output-privacy %s needs --output-epsilon > 0 (finite), got %g", mech, o.Epsilon)
	case answer.PureEpsilon(mech) && o.Delta != 0:
		return fmt.Errorf("--output-privacy %s is pure ε-DP: --output-delta must be 0, got %g", mech, o.Delta)
	case !answer.PureEpsilon(mech) && !(o.Delta > 0 && o.Delta < 1):
		return fmt.Errorf("--output-privacy %s needs --output-delta in (0, 1), got %g", mech, o.Delta)
	}
	if rule != "" {
		if rule != string(simulate.NoiseRuleOff) {
			if _, err := gpucb.ParseNoiseRule(rule); err != nil {
				return err
			}
		}
		cfg.GP.NoiseRule = gpucb.NoiseRule(rule)
	}
	return nil
}

// simulateSettings maps the settings that simulate's errors name to the flags of
// modeler simulate.
var simulateSettings = strings.NewReplacer("DataConfig.LogOutputs", "--log-outputs", "DataConfig.Minimize", "--minimize")

// simulateFlagNames returns err with the settings it names given as flags.
func simulateFlagNames(err error) error {
	if text := simulateSettings.Replace(err.Error()); text != err.Error() {
		return &textError{text: text, err: err}
	}
	return err
}
