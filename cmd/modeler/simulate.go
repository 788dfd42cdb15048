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
	"syscall"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/gpucb"
	"github.com/privbo/privbo/pkg/simulate"
)

// runSimulate is `modeler simulate`: flags → simulate.Config → simulate.Run.
func runSimulate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("modeler simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg                     simulate.Config
		data, target, scaling   string
		minimize, logOut, synth bool
		methods, rs, kernel     string
		grid                    int
		sampler                 string
		synthLS                 float64
		quiet                   bool
	)
	fs.StringVar(&data, "data", "", "CSV data set (the curator's file)")
	fs.StringVar(&target, "target", "", "target column (default: the last column)")
	fs.StringVar(&scaling, "scaling", "", "feature scaling as for curator serve (default: standardise to max norm 25)")
	fs.BoolVar(&minimize, "minimize", false, "minimise the target instead of maximising it")
	fs.BoolVar(&logOut, "log-outputs", false, "take the natural log of the target (must be positive)")
	fs.BoolVar(&synth, "synthetic", false, "the synthetic GP experiment of SPEC §2.4 instead of a data set")
	fs.IntVar(&grid, "grid", 100, "synthetic: g×g grid on [-1,1]²")
	fs.Float64Var(&synthLS, "synthetic-lengthscale", 0, "synthetic: lengthscale of the drawn function in scaled units (default 0.25 × 25)")
	fs.StringVar(&sampler, "sampler", simulate.SamplerKronecker, "synthetic: how to draw f: kronecker (exact, fast) or cholesky (n×n, slow)")
	fs.StringVar(&methods, "methods", "po-gp-ucb,gp-ucb,random", "methods to compare")
	fs.StringVar(&rs, "r", "10", "projection dimensions for po-gp-ucb, comma-separated")
	fs.Float64Var(&cfg.Epsilon, "epsilon", math.Exp(1.1), "ε of each projection")
	fs.Float64Var(&cfg.Delta, "delta", 1e-5, "δ of each projection")
	fs.StringVar(&cfg.ProjectionMechanism, "projection-mechanism", "lifted", "the curator's projection mechanism: lifted (the paper's) or gaussian (noise from crypto/rand: not reproducible from --seed)")
	fs.IntVar(&cfg.Iterations, "iterations", 50, "iterations T per run (the first is the random initial row)")
	fs.IntVar(&cfg.Runs, "runs", 10, "runs per draw and method")
	fs.IntVar(&cfg.Draws, "draws", 1, "synthetic: independent function draws")
	fs.StringVar(&cfg.OutDir, "out", "simulation", "output directory (regret.csv, regret.png, summary.md)")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of draws, initial rows, projections and random search (simulations are not private)")
	fs.IntVar(&cfg.Workers, "workers", 2, "runs in parallel")
	fs.StringVar(&kernel, "kernel", "se", "GP kernel: se or matern52")
	fs.Float64Var(&cfg.GP.Lengthscale, "lengthscale", 0, "GP lengthscale (default: the synthetic one, or the median distance to the mean of the candidates)")
	fs.Float64Var(&cfg.GP.SignalVariance, "signal-variance", 1, "GP signal variance")
	fs.Float64Var(&cfg.GP.NoiseVariance, "noise-variance", 0, "GP noise variance (default: synthetic σ_n², or 1e-3 for standardised data)")
	fs.Float64Var(&cfg.GP.DeltaUCB, "delta-ucb", 0.05, "δ' of the β_t schedule")
	fs.BoolVar(&cfg.GP.Raw, "raw-outputs", false, "do not standardise outputs (data sets)")
	fs.IntVar(&cfg.GP.FitEvery, "fit-every", 0, "refit GP hyperparameters by maximum likelihood every K observations (0: fixed)")
	fs.BoolVar(&quiet, "quiet", false, "no progress lines")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	k, err := gpucb.ParseKernel(kernel)
	if err != nil {
		return err
	}
	cfg.GP.Kernel = k
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
		cfg.Data = &simulate.DataConfig{Path: data, Options: dataset.Options{Target: target, Scaling: sc}, Minimize: minimize, LogOutputs: logOut}
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
		return err
	}
	fmt.Fprintf(stdout, "%s: n = %d, d = %d, T = %d, %d draw(s) × %d runs per method, %s projection, %v\n\n%s\nwrote %s, %s, %s\n",
		res.Problem, res.N, res.D, cfg.Iterations, cfg.Draws, cfg.Runs, cfg.ProjectionMechanism, res.Duration.Round(1e6),
		simulate.MarkdownTable(res.Summary, res.Lifts), res.CSVPath, res.PNGPath, res.SummaryPath)
	return nil
}
