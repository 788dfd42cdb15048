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
	"github.com/privbo/privbo/internal/setting"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/gpucb"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/simulate"
	"github.com/privbo/privbo/pkg/study"
)

// runSimulate is `modeler simulate`: flags → simulate.Config → simulate.Run.
func runSimulate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("modeler simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		scaling, markers, methods, rs, outMech, noiseRule string
		synth, quiet                                      bool
		direction                                         study.Direction
	)
	// Data and Synthetic are both declared; the one not asked for is dropped below.
	cfg, syn := simulate.NewConfig(), simulate.NewSyntheticConfig()
	cfg.Data, cfg.Synthetic = &simulate.DataConfig{}, &syn
	cfg.Output.Lower, cfg.Output.Upper = math.NaN(), math.NaN() // not given
	settings := cfg.Bind().With(setting.Parsed[modeler.DirectionText](&direction, "direction", nil, "maximize or minimize the target (as modeler run --direction)"))
	settings.Register(fs)
	fs.StringVar(&scaling, "scaling", "", "feature scaling as for curator serve (default: standardise to max norm 25)")
	fs.StringVar(&markers, "missing-markers", strings.Join(dataset.DefaultMissingMarkers, ","), "comma-separated cell texts read as missing, as curator serve --missing-markers")
	fs.BoolVar(&synth, "synthetic", false, "the synthetic GP experiment of Kharkovskii et al. (ICML 2020), Table 1, instead of a data set (docs/MATHS.md §2.5)")
	fs.StringVar(&methods, "methods", "po-gp-ucb,gp-ucb,random", "methods to compare")
	fs.StringVar(&rs, "r", "10", "projection dimensions for po-gp-ucb, comma-separated")
	fs.StringVar(&outMech, "output-privacy", answer.MechanismExact, "how the curator releases answers: none (exact), laplace or gaussian (clip to --output-lower/--output-upper, add noise; noise from crypto/rand, not reproducible from --seed)")
	fs.StringVar(&noiseRule, "noise-rule", "", "GP prior for private answers: ratio (default), public-range, standardised, or off (the exact-answer prior); --signal-variance, --noise-variance and --raw-outputs override it")
	fs.BoolVar(&quiet, "quiet", false, "no progress lines")
	if err := cli.Parse(fs, args, stdout); err != nil {
		return err
	}
	if err := settings.CheckFlags(fs); err != nil {
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
	switch data := cfg.Data; {
	case synth && data.Path != "":
		return errors.New("give either --data or --synthetic, not both")
	case synth:
		cfg.Data = nil
	case data.Path != "":
		sc, err := dataset.ParseScaling(scaling)
		if err != nil {
			return err
		}
		data.Options.MissingMarkers, data.Options.Scaling = strings.Split(markers, ","), sc
		data.Minimize = data.Minimize || direction == study.Minimize
		cfg.Synthetic = nil
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
