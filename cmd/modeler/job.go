package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/privbo/privbo/internal/cli"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dphypo"
	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/jobs/jobpb"
	"github.com/privbo/privbo/pkg/kusner"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

const jobUsage = `usage: modeler job <kusner|dphypo|get|list|cancel|watch|report> [flags]

  kusner   submit a Kusner et al. private Bayesian-optimisation job and wait for its result
           (--dry-run: print its price and forecast, pay nothing; a job whose releases the
           forecast finds no better than a uniform pick is refused unless --force)
  dphypo   submit a DP-HyPO adaptive private hyperparameter search and wait for its result
           (by default the curator calibrates its noise so that it costs ε = 2 at δ = 1e-6)
  get ID   print a job; list: your jobs; cancel ID: stop a job; watch ID: follow its progress
  report ID --out DIR   write a job's report (an HTML page) to DIR
`

// connFlags are the flags that reach a curator.
type connFlags struct {
	addr, identity, ca, cert, key, tokenFile, serverName string
}

func (c *connFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.addr, "curator", "127.0.0.1:7070", "curator address host:port")
	fs.StringVar(&c.identity, "identity", "", "identity to be charged, sent in request metadata when the curator takes no certificates or tokens (default: anonymous)")
	fs.StringVar(&c.ca, "ca", "", "CA (PEM) that signed the curator's certificate; turns on TLS")
	fs.StringVar(&c.cert, "cert", "", "client certificate (PEM) for mutual TLS; its common name is the identity charged")
	fs.StringVar(&c.key, "key", "", "client private key (PEM)")
	fs.StringVar(&c.tokenFile, "token-file", "", "file holding a bearer token (TLS only)")
	fs.StringVar(&c.serverName, "server-name", "", "name to verify in the curator's certificate (default: the host of --curator)")
}

// client dials the curator, saying on notice which port it dials when --curator names
// none. An --identity other than the --cert's is refused before anything is sent.
func (c *connFlags) client(notice io.Writer) (curatorv1.CuratorServiceClient, func(), error) {
	cfg := transport.ClientConfig{Identity: c.identity}
	var err error
	if (c.cert == "") != (c.key == "") {
		return nil, nil, errors.New("a client certificate needs both --cert and --key")
	}
	if c.ca != "" || c.cert != "" {
		if cfg.TLS, err = transport.ClientTLS(c.ca, c.cert, c.key, c.serverName); err != nil {
			return nil, nil, fmt.Errorf("TLS files (--ca, --cert, --key): %w", err)
		}
	}
	// A curator taking identities from certificates charges the certificate's and
	// ignores --identity: naming another is a mistake to be told before anything is
	// charged to an identity the caller did not mean.
	if c.identity != "" && cfg.TLS != nil && len(cfg.TLS.Certificates) > 0 && cfg.TLS.Certificates[0].Leaf != nil {
		if cn := cfg.TLS.Certificates[0].Leaf.Subject.CommonName; cn != c.identity {
			return nil, nil, fmt.Errorf("--identity %s is not what the curator charges: it charges the identity of the client certificate (--cert), %s.\n"+
				"  Drop --identity, or give --cert and --key issued to %s", c.identity, cn, c.identity)
		}
	}
	if c.tokenFile != "" {
		b, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return nil, nil, fmt.Errorf("token file: %w", err)
		}
		cfg.Token = strings.TrimSpace(string(b))
	}
	if target, added := transport.Target(c.addr); added {
		fmt.Fprintf(notice, "modeler: --curator %s names no port, so this client dials %s (the port gRPC takes by default); the curator listens on 7070 unless told otherwise.\n", c.addr, target)
	}
	conn, err := transport.Dial(c.addr, cfg)
	if err != nil {
		return nil, nil, err
	}
	return curatorv1.NewCuratorServiceClient(conn), func() { conn.Close() }, nil
}

// gridFlag collects --grid NAME=KIND:... values.
type gridFlag []hparam.Axis

func (g *gridFlag) String() string { return fmt.Sprint(len(*g), " axes") }

// Set reads one axis with hparam.ParseAxis, which checks it as the curator will.
func (g *gridFlag) Set(spec string) error {
	a, err := hparam.ParseAxis(spec)
	if err != nil {
		return err
	}
	*g = append(*g, a)
	return nil
}

// jobFlags hold what the job subcommands are told; the kusner and dphypo
// flags are bound straight to the fields of the spec the curator is sent.
type jobFlags struct {
	conn           connFlags
	grid           gridFlag
	key            string
	asJSON, detach bool
	dryRun         bool
	kusner         jobs.KusnerSpec
	dph            jobs.DPHyPOSpec
	epochs, batch  uint
	iterations     uint
}

func jobCommand(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, jobUsage)
		return errors.New("job: no subcommand")
	}
	sub := args[0]
	switch sub {
	case "report":
		return jobReportCommand(args[1:], stdout, stderr)
	case "kusner", "dphypo", "get", "cancel", "watch", "list":
	default:
		fmt.Fprint(stderr, jobUsage)
		return fmt.Errorf("job: unknown subcommand %q", sub)
	}
	fs := flag.NewFlagSet("modeler job "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f jobFlags
	f.register(fs, sub)
	if err := cli.ParseWithArgs(fs, args[1:], stdout); err != nil {
		return err
	}
	if sub == "dphypo" {
		if err := dphypoNoise(fs, &f.dph); err != nil {
			return err
		}
	}
	conn, closeConn, err := f.conn.client(stderr)
	if err != nil {
		return err
	}
	defer closeConn()
	client := curatorclient.New(conn)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var job jobs.Job
	switch sub {
	case "kusner", "dphypo":
		spec := f.spec(sub)
		if f.dryRun {
			return quoteJob(ctx, client, spec, f.asJSON, stdout)
		}
		if job, err = submitJob(ctx, client, &f, spec, stderr); err != nil {
			return err
		}
	case "list":
		return listJobs(ctx, client, stdout)
	default:
		if fs.NArg() != 1 {
			return fmt.Errorf("job %s: give one job id", sub)
		}
		if job, err = jobByID(ctx, client, sub, fs.Arg(0), stderr); err != nil {
			return fmt.Errorf("job %s: %w", sub, err)
		}
	}
	printJob(stdout, job)
	if f.asJSON {
		if err := printJSON(stdout, jobpb.JobProto(job)); err != nil {
			return err
		}
	}
	if job.State == jobs.Failed {
		return fmt.Errorf("job %s failed: %s", job.ID, job.Error)
	}
	return nil
}

// register binds the flags subcommand sub takes: every subcommand reaches a
// curator, only kusner and dphypo describe a job.
func (f *jobFlags) register(fs *flag.FlagSet, sub string) {
	f.conn.register(fs)
	fs.BoolVar(&f.asJSON, "json", false, "print the job as one JSON object on the last line of stdout")
	if sub != "kusner" && sub != "dphypo" {
		return
	}
	fs.Var(&f.grid, "grid", "a hyperparameter axis, repeatable: NAME=log:LOW:HIGH:COUNT, NAME=linear:LOW:HIGH:COUNT, NAME=list:V1,V2,... or NAME=loglist:V1,V2,...")
	fs.StringVar(&f.key, "idempotency-key", "", "resubmitting with the same key returns the same job instead of starting (and paying for) another (default: a new job)")
	fs.BoolVar(&f.detach, "detach", false, "print the job id and return without waiting")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print what the job would cost and guarantee (and for kusner, what its releases would be worth), pay nothing and run nothing")
	if sub == "kusner" {
		f.registerKusner(fs)
	} else {
		f.registerDPHyPO(fs)
	}
}

func (f *jobFlags) registerKusner(fs *flag.FlagSet) {
	k := &f.kusner
	fs.IntVar(&k.Algorithm, "algorithm", 1, "1: noisy GP (releases λ̃, ṽ); 2: noise-free GP (λ̃, f̃); 3: Lipschitz learner (f̃_L only)")
	fs.UintVar(&f.iterations, "iterations", 20, "Bayesian-optimisation steps T")
	fs.Float64Var(&k.Epsilon, "epsilon", 1, "ε of each release (the job costs 2ε for algorithms 1 and 2)")
	fs.Float64Var(&k.Delta, "delta", 1e-3, "δ of each release (algorithms 1 and 2)")
	fs.Float64Var(&k.Lengthscale, "lengthscale", 0, "GP lengthscale over normalised grid coordinates (0: default)")
	fs.StringVar(&k.Evaluator, "evaluator", "", "an external evaluator configured on the curator (default: its built-in learner)")
	fs.Float64Var(&k.ForecastGap, "forecast-gap", 0, "the forecast's gap: how close to the best (in the objective's units) a candidate must be to count as found (0: 5% of the objective's range)")
	fs.BoolVar(&k.Force, "force", false, "run (and pay for) the job even when the forecast says its releases would be no better than a uniform pick")
}

func (f *jobFlags) registerDPHyPO(fs *flag.FlagSet) {
	dph, sgd := &f.dph, &f.dph.DPSGD
	fs.Float64Var(&dph.Theta, "theta", 1, "runs T ~ truncated NegBin(θ, γ): θ (0 logarithmic, 1 geometric)")
	fs.Float64Var(&dph.Gamma, "gamma", 0.1, "γ in (0, 1) of the number of runs")
	fs.Float64Var(&dph.CMax, "c-max", jobs.DefaultCMax, "upper density bound C ≥ 1; C and c cost at least (2+θ)·log(C/c) of ε whatever the noise (the paper's C = 2, c = 0.75: 2.94 at θ = 1)")
	fs.Float64Var(&dph.CMin, "c-min", jobs.DefaultCMin, "lower density bound c ≤ 1")
	fs.Float64Var(&dph.Tau, "tau", 0.1, "GP rule: s = µ + τσ")
	fs.Float64Var(&dph.Beta, "beta", 1, "GP rule: π ∝ exp(β s)")
	fs.BoolVar(&dph.Uniform, "uniform", false, "uniform baseline (C = c = 1)")
	fs.Float64Var(&dph.TargetEpsilon, "epsilon", 2, "ε the whole search may cost at --delta: the curator chooses the least noise (DP-SGD noise multiplier σ, score noise multiplier 2σ) that keeps its charge within it; not with --noise-multiplier or --score-noise-multiplier, and unused with --evaluator unless given")
	fs.Float64Var(&dph.Delta, "delta", 1e-6, "δ of the (ε, δ) guarantee of the whole search")
	fs.StringVar(&dph.Evaluator, "evaluator", "", "an external evaluator with a declared per-run ε (default: built-in DP-SGD)")
	fs.Float64Var(&sgd.LearningRate, "learning-rate", 0.5, "DP-SGD learning rate (unless on the grid)")
	fs.Float64Var(&sgd.ClipNorm, "clip-norm", 1, "DP-SGD per-example clipping norm R (unless on the grid)")
	fs.Float64Var(&sgd.NoiseMultiplier, "noise-multiplier", 0, "DP-SGD noise multiplier, chosen instead of --epsilon (default: calibrated to --epsilon; 1 when only --score-noise-multiplier is given)")
	fs.UintVar(&f.epochs, "epochs", 5, "DP-SGD epochs")
	fs.UintVar(&f.batch, "batch-size", 64, "DP-SGD expected batch size")
	fs.Float64Var(&sgd.L2, "l2", 1e-3, "L2 regularisation of DP-SGD (unless on the grid)")
	fs.Float64Var(&sgd.ScoreNoiseMultiplier, "score-noise-multiplier", 0, "noise of the validation score in units of its sensitivity, chosen instead of --epsilon (default: calibrated to --epsilon; 2 when only --noise-multiplier is given)")
}

// spec assembles the job sub describes; the flags that are not fields of
// the spec as they stand (unsigned widths, the grid) are converted here,
// after parsing.
func (f *jobFlags) spec(sub string) jobs.Spec {
	if sub == "kusner" {
		k := &f.kusner
		k.Iterations, k.Space = int(f.iterations), f.grid
		return jobs.Spec{Kusner: k}
	}
	f.dph.DPSGD.Epochs, f.dph.DPSGD.BatchSize = int(f.epochs), int(f.batch)
	f.dph.Space = f.grid
	return jobs.Spec{DPHyPO: &f.dph}
}

// quoteJob answers --dry-run: the curator prices the job and charges nothing.
func quoteJob(ctx context.Context, client *curatorclient.Client, spec jobs.Spec, asJSON bool, stdout io.Writer) error {
	q, err := client.QuoteJob(ctx, spec)
	if err != nil {
		return fmt.Errorf("job: quote: %w", err)
	}
	printJobQuote(stdout, q)
	if d := spec.DPHyPO; d != nil {
		printRuleForecast(stdout, d, q.Cost.Epsilon)
	}
	if asJSON {
		return printJSON(stdout, jobpb.QuoteProto(q))
	}
	return nil
}

// submitJob pays for the job and, unless --detach, follows it to its end. A
// job refused on its forecast is explained here, because only the forecast
// tells the modeler what ε would have made it worth running.
func submitJob(ctx context.Context, client *curatorclient.Client, f *jobFlags, spec jobs.Spec, stderr io.Writer) (jobs.Job, error) {
	job, err := client.SubmitJob(ctx, f.key, spec)
	if err != nil {
		err = fmt.Errorf("job: submit: %w", err)
		if fc := curatorclient.RefusedForecast(err); fc != nil {
			fmt.Fprintln(stderr, "job refused before any charge: the forecast finds its releases no better than a uniform pick")
			printForecast(stderr, fc)
			if !math.IsInf(fc.EpsilonNeeded, 1) {
				fmt.Fprintf(stderr, "  a release would beat a uniform pick by %g%% from ε = %.4g; or add --force to run and pay for this one anyway\n", 100*fc.Margin, fc.EpsilonNeeded)
			} else {
				fmt.Fprintln(stderr, "  no ε makes it beat a uniform pick by the margin; add --force to run and pay for it anyway")
			}
			return jobs.Job{}, &refusedError{hint: "see the forecast above", err: err}
		}
		return jobs.Job{}, err
	}
	fmt.Fprintf(stderr, "job %s accepted: charged ε=%g δ=%g — %s\n", job.ID, job.Cost.Epsilon, job.Cost.Delta, job.Guarantee)
	if f.detach {
		return job, nil
	}
	return client.WaitJob(ctx, job.ID, progressTo(stderr))
}

func listJobs(ctx context.Context, client *curatorclient.Client, stdout io.Writer) error {
	js, err := client.Jobs(ctx)
	if err != nil {
		return fmt.Errorf("job: list: %w", err)
	}
	for _, j := range js {
		fmt.Fprintf(stdout, "%s  %-9s  %-7s  ε=%g δ=%g\n", j.ID, j.State, j.Spec.Kind(), j.Cost.Epsilon, j.Cost.Delta)
	}
	return nil
}

// jobByID does what get, cancel or watch asks of one job and returns it as
// it then stands.
func jobByID(ctx context.Context, client *curatorclient.Client, sub, id string, stderr io.Writer) (jobs.Job, error) {
	switch sub {
	case "get":
		return client.Job(ctx, id)
	case "cancel":
		return client.CancelJob(ctx, id)
	default:
		return client.WaitJob(ctx, id, progressTo(stderr))
	}
}

// printJSON prints m as the one JSON object on the last line of stdout that
// --json promises, with the field names of the .proto file.
func printJSON(w io.Writer, m proto.Message) error {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, string(b))
	return nil
}

// dphypoNoise settles who chooses a DP-HyPO job's noise: the curator, calibrating it to
// --epsilon (the default), or the modeler, with --noise-multiplier and
// --score-noise-multiplier (either one alone takes the other's former default).
func dphypoNoise(fs *flag.FlagSet, dph *jobs.DPHyPOSpec) error {
	sgd := &dph.DPSGD
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	explicit := given["noise-multiplier"] || given["score-noise-multiplier"]
	switch {
	case explicit && given["epsilon"]:
		return errors.New("job dphypo: give --epsilon (the curator then chooses the noise) or --noise-multiplier and --score-noise-multiplier, not both")
	case explicit:
		dph.TargetEpsilon = 0
		if !given["noise-multiplier"] {
			sgd.NoiseMultiplier = 1
		}
		if !given["score-noise-multiplier"] {
			sgd.ScoreNoiseMultiplier = 2
		}
	case dph.Evaluator != "" && !given["epsilon"]:
		// An external evaluator's per-run guarantee is its operator's; nothing to calibrate.
		dph.TargetEpsilon = 0
	}
	return nil
}

// printJobQuote prints a job's quote: its price, relation, guarantee and forecast.
func printJobQuote(w io.Writer, q jobpb.Quote) {
	fmt.Fprintf(w, "dry run, nothing charged: the job would cost ε=%g δ=%g under the relation %s\n", q.Cost.Epsilon, q.Cost.Delta, q.Relation)
	fmt.Fprintf(w, "  guarantee: %s\n", q.Guarantee)
	if f := q.Forecast; f != nil {
		printForecast(w, f)
		switch {
		case q.Refused:
			fmt.Fprintf(w, "  the curator would REFUSE it: no release beats a uniform pick by %g%%", 100*f.Margin)
			if !math.IsInf(f.EpsilonNeeded, 1) {
				fmt.Fprintf(w, " (one would from ε = %.4g)", f.EpsilonNeeded)
			}
			fmt.Fprintln(w, "; --force runs it anyway")
		case !f.Informative:
			fmt.Fprintln(w, "  no release beats a uniform pick by the margin, but --force is set: it would run and be charged")
		}
	}
}

// printRuleForecast says in one line whether the GP rule is expected to beat uniform
// search at the quoted ε, from the measured comparisons (dphypo.ForecastRule); for a
// uniform search, at the default density bounds.
func printRuleForecast(w io.Writer, d *jobs.DPHyPOSpec, eps float64) {
	space, err := hparam.SpaceOf(d.Space...)
	if err != nil {
		return
	}
	ratio := d.CMax / d.CMin
	if d.Uniform {
		ratio = jobs.DefaultCMax / jobs.DefaultCMin
	}
	fmt.Fprintf(w, "  %s\n", dphypo.ForecastRule(ratio, eps, dp.NegBinMean(d.Theta, d.Gamma), space.Size()))
}

// printForecast prints a Kusner job's forecast.
func printForecast(w io.Writer, f *kusner.Forecast) {
	fmt.Fprintf(w, "  forecast over %d candidates at ε=%g per release (objective range %g, gap %g):\n", f.Candidates, f.Epsilon, f.Range, f.Gap)
	if f.HasSelection {
		fmt.Fprintf(w, "    hyperparameter: picks the one candidate within %g of the posterior maximum with probability %.4g to %.4g; a uniform pick %.4g (at most %.4g× as likely)\n",
			f.Gap, f.WithinGapMin, f.WithinGapMax, f.UniformProbability, f.SelectionLift)
	}
	fmt.Fprintf(w, "    value: Laplace noise of scale %.4g on a range of %g; within %g of the truth with probability %.4g, a uniform guess %.4g (%.4g×)\n",
		f.LaplaceScale, f.Range, f.Gap, f.ValueWithinGap, f.UniformValueWithinGap, f.ValueLift)
}

// progressTo prints a job's events to w as they come.
func progressTo(w io.Writer) func(jobs.Event) {
	return func(e jobs.Event) {
		if e.Total > 0 {
			fmt.Fprintf(w, "  [%s] step %d/%d %s\n", e.State, e.Step, e.Total, e.Message)
		} else {
			fmt.Fprintf(w, "  [%s] %s\n", e.State, e.Message)
		}
	}
}

func printJob(w io.Writer, j jobs.Job) {
	fmt.Fprintf(w, "job %s: %s (%s), charged ε=%g δ=%g\n", j.ID, j.State, j.Spec.Kind(), j.Cost.Epsilon, j.Cost.Delta)
	if j.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", j.Error)
	}
	r := j.Result
	if r == nil {
		return
	}
	if r.HasHyperparameters {
		for _, k := range slices.Sorted(maps.Keys(r.Hyperparameters)) {
			fmt.Fprintf(w, "  released %s = %g\n", k, r.Hyperparameters[k])
		}
	}
	fmt.Fprintf(w, "  released score = %g\n", r.Score)
	if r.Runs > 0 {
		fmt.Fprintf(w, "  runs = %d\n", r.Runs)
	}
	if c := r.Constants; c["target_epsilon"] > 0 {
		fmt.Fprintf(w, "  noise calibrated to target ε=%g: noise multiplier %.4g, score noise multiplier %.4g\n",
			c["target_epsilon"], c["noise_multiplier"], c["score_noise_multiplier"])
	}
	fmt.Fprintf(w, "  guarantee: %s\n", r.Guarantee)
}
