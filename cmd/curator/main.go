// Command curator runs privbo's curator: a gRPC daemon that serves differentially private
// releases of a sensitive dataset and charges each to a durable privacy ledger.
//
//	curator serve  --data FILE --target COLUMN --dataset-id ID --state DIR --budget-epsilon E --budget-delta D
//	               [--schema FILE.schema.csv] [flags]
//	curator ledger --state DIR --dataset-id ID [--json | --csv]
//	curator results --state DIR --dataset-id ID [--identity X] [--json]
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
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/privbo/privbo/internal/cli"
	"github.com/privbo/privbo/internal/flagconf"
	"github.com/privbo/privbo/internal/logging"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/devca"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/server"
	"github.com/privbo/privbo/pkg/storage"
	"github.com/privbo/privbo/pkg/transport"
	"github.com/privbo/privbo/pkg/tuning"
)

const usage = `usage: curator <command> [flags]

commands:
  serve         load a dataset and serve private releases over gRPC
  ledger        print the privacy ledger: every charge, and each identity's remaining budget
  results       the hospital's view of each study: the rows evaluated, their true outcome and rank (local, no privacy cost)
  pending       list the rows waiting for a recorded evaluation (--evaluate manual)
  record        record the evaluation of a pending row
  check-config  validate a serve configuration (flags, file, environment) without serving
  dev-ca        create a development CA, a server certificate and client certificates
  hash-token    print the line of a token file for a bearer token read from stdin
  job-report    write a job's operator report (HTML), with the path the modeler never sees

Run 'curator <command> -h' for the flags of a command.
`

func main() {
	err := run(os.Args[1:])
	if cli.ExitCode(err) != 0 {
		fmt.Fprintln(os.Stderr, "curator:", err)
	}
	os.Exit(cli.ExitCode(err))
}

// run runs a command; the server's errors name its Config fields, which are given here
// the names of the flags that set them.
func run(args []string) error {
	return withFlagNames(runCommand(args))
}

func runCommand(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return errors.New("no command given")
	}
	switch args[0] {
	case "serve":
		return serve(args[1:])
	case "ledger":
		return printLedger(args[1:])
	case "results":
		return results(args[1:])
	case "pending":
		return pending(args[1:])
	case "record":
		return record(args[1:])
	case "check-config":
		return checkConfig(args[1:])
	case "dev-ca":
		return devCA(args[1:])
	case "hash-token":
		return hashToken(args[1:])
	case "job-report":
		return jobReport(args[1:])
	case "-h", "--help", "help":
		fmt.Print(usage)
		return nil
	}
	fmt.Fprint(os.Stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

// ledgerFlags are shared by serve and ledger.
type ledgerFlags struct {
	state                      string
	kind, dsn, schema          string
	timeout                    time.Duration
	epsilon, delta             float64
	datasetEpsilon, datasetDel float64
	patient, patientDataset    ledger.Cost
}

func (l *ledgerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.state, "state", "", "directory for state that must survive restarts: ledger, released matrices (required)")
	d := config.NewConfig()
	fs.StringVar(&l.kind, "ledger", d.Ledger.Kind, "privacy ledger store: sqlite (in --state) or postgres")
	fs.StringVar(&l.dsn, "ledger-dsn", "", "PostgreSQL connection string, for --ledger postgres")
	fs.StringVar(&l.schema, "ledger-schema", d.Ledger.Schema, "PostgreSQL schema of the ledger tables")
	fs.DurationVar(&l.timeout, "ledger-timeout", d.Ledger.CallTimeout, "bound on each call to the PostgreSQL ledger, connecting included: a call the database "+
		"does not answer within it fails at once (UNAVAILABLE to the client); it must exceed the slowest charge under load")
	fs.Float64Var(&l.epsilon, "budget-epsilon", 0, "privacy budget ε of each modeler identity (required by serve)")
	fs.Float64Var(&l.delta, "budget-delta", d.Budget.Delta, "privacy budget δ of each modeler identity: small against 1/n (the number of records); 0 allows only pure ε-DP releases and refuses the default Gaussian projection (warned about)")
	fs.Float64Var(&l.datasetEpsilon, "dataset-budget-epsilon", 0, "ε cap over all identities together (default: --budget-epsilon)")
	fs.Float64Var(&l.datasetDel, "dataset-budget-delta", 0, "δ cap over all identities together (default: --budget-delta)")
	fs.Float64Var(&l.patient.Epsilon, "patient-budget-epsilon", 0, "cap on what one patient can lose to one identity, over every relation: the ε of its whole-patient total "+
		"(each release's (ε, δ) for replacing one patient's record by any other, added up); 0: no cap, the default (at the default unit one projection at ε=1 costs a whole patient ε≈134: "+
		"see docs/PRIVACY.md, and --scaling '...;unit=50' for releases whose ε is the whole patient's); a cap refuses releases with no finite whole-patient figure")
	fs.Float64Var(&l.patient.Delta, "patient-budget-delta", 0, "δ of the whole-patient cap of each identity (default: --budget-delta)")
	fs.Float64Var(&l.patientDataset.Epsilon, "patient-dataset-budget-epsilon", 0, "cap on what one patient can lose to all identities together (and the curator's own estimates): ε (default: --patient-budget-epsilon)")
	fs.Float64Var(&l.patientDataset.Delta, "patient-dataset-budget-delta", 0, "δ of the whole-patient cap of the dataset (default: the per-identity cap's)")
}

func (l *ledgerFlags) config() (config.LedgerConfig, ledger.Cost, ledger.Cost) {
	// Each part of the dataset cap defaults to the identity budget's on its own.
	ds := ledger.Cost{Epsilon: l.datasetEpsilon, Delta: l.datasetDel}
	if ds.Epsilon == 0 {
		ds.Epsilon = l.epsilon
	}
	if ds.Delta == 0 {
		ds.Delta = l.delta
	}
	return config.LedgerConfig{Kind: l.kind, DSN: l.dsn, Schema: l.schema, CallTimeout: l.timeout}, ledger.Cost{Epsilon: l.epsilon, Delta: l.delta}, ds
}

// limits are the ledger limits the flags set, with the defaults serve fills in.
func (l *ledgerFlags) limits() ledger.Limits {
	_, per, ds := l.config()
	p, pd := config.PatientCaps(per, l.patient, l.patientDataset)
	return ledger.Limits{PerIdentity: per, Dataset: ds, Patient: ledger.PatientLimits{PerIdentity: p, Dataset: pd}}
}

// serveFlags are the flags of serve and check-config.
type serveFlags struct {
	lf                                   ledgerFlags
	cfg                                  config.Config
	configFile                           string
	features, scaling, addrFile          string
	exclude, missingMarkers              string
	schema                               schemaValue
	logLevel, logFormat                  string
	outMech                              string
	outEps, outDelta, outLower, outUpper float64
	evaluators, evaluatorEpsilons        string
	evaluatorRDP                         string
	evaluatorTimeout                     time.Duration
	evaluateProgram                      string
	// set holds the flags given on the command line, in the environment or in the
	// configuration file.
	set map[string]bool
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	// Every default is config.NewConfig's: the flags only name and explain them.
	f.cfg = config.NewConfig()
	cfg, d := &f.cfg, config.NewConfig()
	f.lf.register(fs)
	fs.BoolVar(&cfg.ChangeLimits, "change-limits", false, "make this start's budget flags the limits in force when they differ from those the ledger records "+
		"(every curator sharing the ledger enforces them from its next charge; curator ledger lists the change); without it such a start is refused")
	fs.StringVar(&f.configFile, "config", "", "configuration file: TOML whose keys are the flags' names, flag-name = value (arrays are joined by commas); flags and PRIVBO_CURATOR_* environment variables override it")
	fs.StringVar(&cfg.DataPath, "data", "", "CSV file with a header row (required)")
	fs.StringVar(&cfg.Data.Target, "target", "", "column holding the objective f(x) (required)")
	fs.StringVar(&f.features, "features", "", "comma-separated feature columns (default: all but the target and --exclude)")
	fs.StringVar(&f.exclude, "exclude", "", "comma-separated columns to leave out (a text label, an identifier); a text column can instead be a categorical feature, one-hot encoded from the public categories its --schema line lists")
	fs.StringVar(&f.missingMarkers, "missing-markers", strings.Join(dataset.DefaultMissingMarkers, ","), "comma-separated cell texts read as a missing value (without case; an empty cell always is): "+
		"a feature's missing cell takes the public value of its --schema line's missing field (missing_indicator yes adds a 0/1 feature column=missing), and is refused without one; "+
		"a row whose target is missing is no candidate and is dropped")
	fs.StringVar(&f.scaling, "scaling", "", "how rows are put on the protected unit (default: schema with --schema, else private): schema:FILE (public bounds or scales per column), private[:EPS] (bounds estimated with DP at the first start, charged to the dataset cap, see --private-scaling-share), fixed:col=scale[@offset],..., none (these clip rows to norm 25; options ;clip=R;unit=U), or standardise-nonprivate[:MAXNORM] / maxnorm-nonprivate[:MAXNORM], which scale with the data's own statistics so the (ε, δ) claim does NOT hold (warned about)")
	fs.Var(&f.schema, "schema", "public schema CSV (column,lower,upper or column,scale,offset lines, optionally categories, missing, missing_indicator, transform; e.g. examples/data/diabetes.schema.csv): scales the features with public bounds, and its target line gives the range of private answers; the same as --scaling schema:FILE. In the configuration file, also the schema itself as [[schema.column]] tables (name, lower, upper or scale, offset; missing, missing_indicator, transform)")
	fs.Float64Var(&cfg.PrivateScalingShare, "private-scaling-share", d.PrivateScalingShare, "fraction in (0, 1) of --budget-epsilon (and of the δ budget) spent once, at the first start, on estimating privately what no public source gives: the feature bounds (--scaling private, the default without --schema) and, with them, the target's range of private answers; charged to the dataset cap under the identity _curator. The start forecasts the estimate's quality from the number of rows and columns: coarse is warned about, poor is refused (also by check-config)")
	fs.BoolVar(&cfg.EstimateTargetRange, "estimate-target-range", false, "with a public scaling (--schema, fixed, none) whose schema has no line for the target, and private answers without --output-lower/--output-upper: estimate the target's range privately (--private-scaling-share of the budget) instead of refusing to start")
	fs.StringVar(&cfg.DatasetID, "dataset-id", "", "stable identity of the dataset, declared by the operator (required): budgets are kept per dataset id, so renaming or moving the file never resets them; keep it for as long as these records are served")
	fs.StringVar(&cfg.DatasetName, "name", "", "display name of the dataset shown to modelers (default: the file name); budgets are kept per --dataset-id, not per name")
	fs.StringVar(&cfg.Listen, "listen", d.Listen, "TCP address to serve on")
	fs.StringVar(&f.addrFile, "addr-file", "", "write the listening address to this file once serving (useful with port 0)")
	fs.Float64Var(&cfg.NoiseSD, "noise-sd", 0, "standard deviation of Gaussian observation noise recorded once per row (simulated measurement noise, not privacy)")
	fs.StringVar(&cfg.Evaluation.Mode, "evaluate", d.Evaluation.Mode, "how a row is evaluated: column (the target), program (--evaluate-program per row) or manual (a person records it: curator pending / curator record)")
	fs.StringVar(&f.evaluateProgram, "evaluate-program", "", "program evaluating one row: {\"index\": i, \"features\": {...}} on stdin, a number on stdout")
	fs.DurationVar(&cfg.Evaluation.Timeout, "evaluate-timeout", d.Evaluation.Timeout, "time limit of one program evaluation")
	fs.StringVar(&f.outMech, "output-privacy", d.Output.Mechanism, "release of query answers: laplace or gaussian (differentially private: answers are clipped to the target's range from --output-lower/--output-upper, else the --schema target line, else a private estimate), or none (exact, unprotected answers: no guarantee at all; warned about, capped by --exact-answers-max-rows, only to identities holding a projection)")
	fs.Float64Var(&f.outEps, "output-epsilon", d.Output.Epsilon, "ε of each private answer; one identity's answers compose in parallel (each record influences one answer), so this is what all of an identity's answers cost, charged once")
	fs.Float64Var(&f.outDelta, "output-delta", d.Output.Delta, "δ of each gaussian answer, charged once per identity like --output-epsilon")
	fs.Float64Var(&f.outLower, "output-lower", d.Output.Lower, "lower end of the declared range of the target for private outputs (answers are clipped to it); overrides the schema's target line")
	fs.Float64Var(&f.outUpper, "output-upper", d.Output.Upper, "upper end of the declared range of the target for private outputs; overrides the schema's target line")
	fs.Float64Var(&cfg.DefaultStudy.Epsilon, "study-epsilon", 0, fmt.Sprintf("ε of the default study's projection, quoted to modelers that name none (default %g)", curator.DefaultStudyEpsilon))
	fs.Float64Var(&cfg.DefaultStudy.Delta, "study-delta", 0, "δ of the default study's projection (default: the share of the δ budgets that holds as many default studies as the ε budgets)")
	fs.IntVar(&cfg.ExactAnswersMaxRows, "exact-answers-max-rows", d.ExactAnswersMaxRows, "with --output-privacy none: the most distinct rows of the dataset answered exactly, to all identities together")
	fs.BoolVar(&cfg.AllowExactProgramAnswers, "allow-exact-program-answers", false, "accept --evaluate program with --output-privacy none, whose answers are exact functions of each queried record's features (refused otherwise)")
	fs.IntVar(&cfg.MaxQueryIndices, "max-query-indices", d.MaxQueryIndices, "maximum indices in one query")
	fs.IntVar(&cfg.MaxProjectionDim, "max-projection-dim", d.MaxProjectionDim, "maximum projection dimension r")
	fs.StringVar(&cfg.ProjectionMechanism, "projection-mechanism", d.ProjectionMechanism, "how projections are made private: gaussian (the projection plus Gaussian noise: (ε, δ)-DP against any adversary) or lifted (the paper's Algorithm 1, for reproducing it: no noise, the release is the data times a fixed matrix, so its (ε, δ) claim fails and a modeler who knows d+1 rows recovers linear measurements of every other row)")
	fs.Var((*cli.Bytes)(&cfg.MemoryLimit), "memory-limit", "memory the curator may use in all, such as 2GiB (default: the container's cgroup memory limit, else the machine's physical memory); the Go runtime's soft limit is set to 90% of it unless GOMEMLIMIT is set, and --release-memory's default derives from it")
	fs.Var((*cli.Bytes)(&cfg.ReleaseMemory), "release-memory", "memory the releases being computed, stored and streamed may hold together, such as 1GiB: a new release is computed once what it needs (known from n, d, r, the mechanism and the store) fits beside the others, waiting its turn within its request's deadline, and one needing more than all of it is refused (RESOURCE_EXHAUSTED, reason MEMORY_LIMIT, naming the largest r that fits) (default: 75% of --memory-limit less the dataset and 64MiB for the runtime)")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", d.ShutdownTimeout, "how long in-flight requests may run after SIGTERM")
	fs.StringVar(&cfg.TLS.CertFile, "tls-cert", "", "server certificate (PEM); serves TLS")
	fs.StringVar(&cfg.TLS.KeyFile, "tls-key", "", "server private key (PEM)")
	fs.StringVar(&cfg.TLS.ClientCAFile, "client-ca", "", "CA (PEM) whose client certificates identify modelers (mutual TLS)")
	fs.StringVar(&cfg.TokensFile, "tokens", "", "bearer-token file: \"IDENTITY SHA256HEX\" lines (see 'curator hash-token')")
	fs.BoolVar(&cfg.AllowPlaintext, "allow-plaintext", false, "serve plaintext on a non-loopback address (only behind a TLS-terminating proxy)")
	fs.BoolVar(&cfg.TrustIdentityHeaderFromNetwork, "trust-identity-header-from-network", false, "serve on a non-loopback address without --client-ca or --tokens, charging whatever identity each caller names in its privbo-identity header: anyone who can reach --listen can spend any identity's budget (only behind something that authenticates callers and sets the header; warned about)")
	fs.Float64Var(&cfg.Limits.Rate, "rate-limit", 0, "requests per second per identity (0: unlimited)")
	fs.IntVar(&cfg.Limits.Burst, "rate-burst", 0, "burst of requests per identity (default: the rate)")
	fs.IntVar(&cfg.Limits.Concurrent, "max-in-flight", 0, "concurrent requests per identity (0: unlimited)")
	fs.Float64Var(&cfg.AuthFailures.Rate, "auth-failure-rate", d.AuthFailures.Rate, "failed authentications per second one peer (IPv4 address or IPv6 /64) may cause after its burst; beyond, its requests are refused before authentication (negative: no throttle)")
	fs.IntVar(&cfg.AuthFailures.Burst, "auth-failure-burst", d.AuthFailures.Burst, "failed authentications one peer may cause at once")
	fs.IntVar(&cfg.AuthFailures.Logged, "auth-failures-logged", d.AuthFailures.Logged, "failed or refused requests of one peer logged a line each per --auth-failure-log-interval; the rest are summarised in one line")
	fs.DurationVar(&cfg.AuthFailures.LogInterval, "auth-failure-log-interval", d.AuthFailures.LogInterval, "interval of --auth-failures-logged")
	fs.IntVar(&cfg.AuthFailures.MaxPeers, "auth-failure-peers", d.AuthFailures.MaxPeers, "peers with recent failed authentications remembered (the least recent is forgotten beyond)")
	fs.IntVar(&cfg.MaxHeaderBytes, "max-header-bytes", d.MaxHeaderBytes, "largest request headers (metadata) accepted, in bytes; read before authentication")
	fs.StringVar(&cfg.MetricsListen, "metrics-listen", "", "serve Prometheus metrics at http://ADDR/metrics")
	fs.BoolVar(&cfg.Jobs.Enabled, "jobs", false, "accept private hyperparameter-tuning jobs on this dataset (the target must be a class label: 0/1, or 0 … K−1 with K from the schema's target bounds [0, K−1])")
	fs.Float64Var(&cfg.Jobs.ValidationFraction, "job-validation-fraction", d.Jobs.ValidationFraction, "fraction of rows forming the sensitive validation part of tuning jobs")
	fs.Uint64Var(&cfg.Jobs.SplitSeed, "job-split-seed", d.Jobs.SplitSeed, "seed of the training/validation split of tuning jobs")
	fs.StringVar(&f.evaluators, "evaluators", "", "external evaluators for jobs: NAME=PROGRAM[,NAME=PROGRAM] (hyperparameters as JSON on stdin, {\"score\": x} on stdout)")
	fs.StringVar(&f.evaluatorEpsilons, "evaluator-epsilons", "", "declared per-run pure-DP ε of evaluators usable by DP-HyPO: NAME=EPS[,NAME=EPS]")
	fs.StringVar(&f.evaluatorRDP, "evaluator-rdp", "", "declared per-run Rényi-DP curve of evaluators usable by DP-HyPO: NAME=ALPHA:EPS/ALPHA:EPS/...[,NAME=...]")
	fs.DurationVar(&f.evaluatorTimeout, "evaluator-timeout", curator.DefaultEvaluationTimeout, "time limit of one external evaluation")
	fs.IntVar(&cfg.Jobs.MaxGrid, "max-job-grid", d.Jobs.MaxGrid, "largest hyperparameter grid a job may search")
	fs.IntVar(&cfg.Jobs.MaxIterations, "max-job-iterations", d.Jobs.MaxIterations, "most iterations (or expected runs) of a job")
	fs.Float64Var(&cfg.Jobs.Kusner.K1, "kusner-k1", 0, "Kusner jobs: the dataset-kernel value k1(V, V') of neighbouring validation sets, in [0, 1); 0 is the most conservative")
	fs.Float64Var(&cfg.Jobs.Kusner.NoiseVariance, "kusner-noise-variance", d.Jobs.Kusner.NoiseVariance, "Kusner jobs: observation noise variance σ² of Algorithm 1")
	fs.Float64Var(&cfg.Jobs.Kusner.GammaT, "kusner-gamma-t", 0, "Kusner jobs: a known bound on the information gain γ_T (0: the greedy upper bound)")
	fs.Float64Var(&cfg.Jobs.Kusner.A, "kusner-a", 0, "Kusner jobs: regret constant A of Algorithm 2 (unset: Algorithm 2 refused)")
	fs.Float64Var(&cfg.Jobs.Kusner.Tau, "kusner-tau", 0, "Kusner jobs: regret constant τ of Algorithm 2 (unset: Algorithm 2 refused)")
	fs.IntVar(&cfg.Jobs.MaxRunning, "max-running-jobs", d.Jobs.MaxRunning, "jobs run at once; others wait queued")
	fs.DurationVar(&cfg.Jobs.Lease, "job-lease", d.Jobs.Lease, "with --ledger postgres: how long a replica's claim on a running job lasts unrenewed (renewed every third of it); a job whose replica died runs again on another within about 4/3 of it")
	fs.Float64Var(&cfg.Jobs.BoundsEpsilon, "job-bounds-epsilon", 0, "DP-HyPO jobs with the built-in learner, when the schema gives no public bounds for every feature: ε each job spends estimating them privately (added to its cost); 0 refuses such jobs")
	fs.IntVar(&cfg.Jobs.Classes, "job-classes", 0, "tuning jobs: the public number K of classes of the target's labels 0 … K−1 (0: from the schema's target line — its categories, or bounds [0, K−1] — else 2, 0/1 labels)")
	fs.BoolVar(&cfg.Jobs.TrainingConsented, "job-training-consented", false, "declare that every patient of the tuning jobs' training part consented to their records being used "+
		"without a privacy guarantee (or that the part is public): Kusner jobs, which train on it with no mechanism, then have a whole-patient figure for the patients they do protect; "+
		"without it their whole-patient figure is not bounded and a whole-patient cap refuses them")
	fs.StringVar((*string)(&cfg.Jobs.Preprocessing), "job-preprocessing", "", "DP-HyPO's built-in learner: bounded (default: public schema bounds or private estimates) or standardise-nonprivate (no privacy guarantee)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.logFormat, "log-format", "json", "log format: json or console")
}

// parseServe parses args, then the environment and the configuration file.
func parseServe(name string, args []string) (*serveFlags, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	f := &serveFlags{}
	f.register(fs)
	fs.Usage = groupedUsage(fs, serveSections)
	if err := cli.Parse(fs, args, os.Stdout); err != nil {
		return nil, err
	}
	if f.configFile == "" {
		f.configFile = os.Getenv(flagconf.EnvName(envPrefix, "config"))
	}
	if err := flagconf.Apply(fs, f.configFile, envPrefix); err != nil {
		return nil, err
	}
	if err := cli.CheckFlags(fs, serveRules); err != nil {
		return nil, err
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	return f, nil
}

const envPrefix = "PRIVBO_CURATOR"

// build turns the flags into the server's configuration.
func (f *serveFlags) build() (config.Config, error) {
	cfg := f.cfg
	if cfg.DataPath == "" || cfg.Data.Target == "" {
		return cfg, errors.New("--data and --target are required")
	}
	if cfg.DatasetID == "" {
		return cfg, errors.New("--dataset-id is required: budgets are kept per dataset id, so that renaming or moving the data file " +
			"never gives the same records a fresh budget; declare a stable id for these records (an existing deployment keeps its ledger " +
			"with the dataset name it used so far: the file name without extension, or its --name)")
	}
	if f.features != "" {
		cfg.Data.Features = strings.Split(f.features, ",")
	}
	if f.exclude != "" {
		cfg.Data.Exclude = strings.Split(f.exclude, ",")
	}
	cfg.Data.MissingMarkers = strings.Split(f.missingMarkers, ",")
	sc, err := scalingOf(f.scaling, &f.schema)
	if err != nil {
		return cfg, err
	}
	cfg.Data.Scaling = sc
	cfg.StateDir = f.lf.state
	cfg.Ledger, cfg.Budget, cfg.DatasetBudget = f.lf.config()
	cfg.PatientBudget, cfg.PatientDatasetBudget = f.lf.patient, f.lf.patientDataset
	cfg.Output = curator.OutputPrivacy{Mechanism: f.outMech, Epsilon: f.outEps, Delta: f.outDelta, Lower: f.outLower, Upper: f.outUpper}
	if answer.IsExact(f.outMech) && !f.set["output-epsilon"] {
		cfg.Output.Epsilon = 0 // the default ε is that of private answers
	}
	if f.evaluateProgram != "" {
		cfg.Evaluation.Command = []string{f.evaluateProgram}
	}
	evs, err := parseEvaluators(f.evaluators, f.evaluatorEpsilons, f.evaluatorRDP, f.evaluatorTimeout)
	if err != nil {
		return cfg, err
	}
	cfg.Jobs.Evaluators = evs
	return cfg, nil
}

// scalingOf is the scaling of --scaling and --schema: the named scaling, schema with
// the --schema file (or the configuration file's schema tables) when --scaling is not
// given, and private when neither is. The data-dependent modes are used only when named.
func scalingOf(scaling string, sv *schemaValue) (dataset.Scaling, error) {
	scaling, schema := strings.TrimSpace(scaling), strings.TrimSpace(sv.file)
	if sv.table != nil {
		if scaling != "" {
			return dataset.Scaling{}, fmt.Errorf("the configuration file's [[schema.column]] tables conflict with --scaling %s: the tables mean scaling schema with them; give one of them", scaling)
		}
		sc, err := dataset.ParseScaling(string(dataset.ScaleNone)) // the options of the private modes, at their defaults
		sc.Mode, sc.Schema = dataset.ScaleSchema, sv.table
		return sc, err
	}
	switch {
	case scaling == "" && schema == "":
		return dataset.ParseScaling(string(dataset.ScalePrivate))
	case scaling == "":
		return dataset.ParseScaling(string(dataset.ScaleSchema) + ":" + schema)
	}
	sc, err := dataset.ParseScaling(scaling)
	if err != nil {
		return sc, err
	}
	if schema != "" && (sc.Mode != dataset.ScaleSchema || filepath.Clean(sc.Schema.File) != filepath.Clean(schema)) {
		return sc, fmt.Errorf("--schema %s conflicts with --scaling %s: --schema means --scaling schema:%s; give one of them", schema, scaling, schema)
	}
	return sc, nil
}

// parseEvaluators reads NAME=PROGRAM pairs and NAME=EPS declarations.
func parseEvaluators(progs, epsilons, rdps string, timeout time.Duration) ([]tuning.Evaluator, error) {
	pairs := func(s, what string) ([][2]string, error) {
		var out [][2]string
		if s == "" {
			return nil, nil
		}
		for _, kv := range strings.Split(s, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" || v == "" {
				return nil, fmt.Errorf("%s: want NAME=VALUE pairs separated by commas, got %q", what, kv)
			}
			out = append(out, [2]string{k, v})
		}
		return out, nil
	}
	ps, err := pairs(progs, "--evaluators")
	if err != nil {
		return nil, err
	}
	es, err := pairs(epsilons, "--evaluator-epsilons")
	if err != nil {
		return nil, err
	}
	var evs []tuning.Evaluator
	index := map[string]int{}
	for _, p := range ps {
		index[p[0]] = len(evs)
		evs = append(evs, tuning.Evaluator{Name: p[0], Command: []string{p[1]}, Timeout: timeout})
	}
	for _, e := range es {
		k, ok := index[e[0]]
		if !ok {
			return nil, fmt.Errorf("--evaluator-epsilons names %q, which --evaluators does not define", e[0])
		}
		v, err := strconv.ParseFloat(e[1], 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("--evaluator-epsilons: %s=%s is not a positive ε", e[0], e[1])
		}
		evs[k].Epsilon = v
	}
	rs, err := pairs(rdps, "--evaluator-rdp")
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		k, ok := index[r[0]]
		if !ok {
			return nil, fmt.Errorf("--evaluator-rdp names %q, which --evaluators does not define", r[0])
		}
		var curve dp.RDPCurve
		for _, point := range strings.Split(r[1], "/") {
			a, e, ok := strings.Cut(point, ":")
			alpha, err1 := strconv.ParseFloat(a, 64)
			eps, err2 := strconv.ParseFloat(e, 64)
			if !ok || err1 != nil || err2 != nil {
				return nil, fmt.Errorf("--evaluator-rdp %s: want ALPHA:EPS points separated by '/', got %q", r[0], point)
			}
			curve.Orders, curve.Epsilons = append(curve.Orders, alpha), append(curve.Epsilons, eps)
		}
		if err := curve.Validate(); err != nil {
			return nil, fmt.Errorf("--evaluator-rdp %s: %w", r[0], err)
		}
		evs[k].RDP = &curve
	}
	return evs, nil
}

func serve(args []string) error {
	f, err := parseServe("curator serve", args)
	if err != nil {
		return err
	}
	cfg, err := f.build()
	if err != nil {
		return err
	}
	log, err := logging.New(f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	defer log.Sync()
	cfg.Logger = log
	for _, w := range config.Warnings(cfg) {
		fmt.Fprintln(os.Stderr, "curator:", flagText(w))
	}
	cfg.Warn = func(w string) { fmt.Fprintln(os.Stderr, "curator:", flagText(w)) }

	// The garbage collector works harder as the heap nears the memory limit, rather than
	// letting the kernel kill the process; an explicit GOMEMLIMIT wins.
	if os.Getenv("GOMEMLIMIT") == "" {
		if lim := server.RuntimeMemoryLimit(cfg.MemoryLimit); lim > 0 {
			debug.SetMemoryLimit(lim)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		return err
	}
	if p := srv.LimitsStart().Previous; p != nil {
		fmt.Fprintf(os.Stderr, "curator: WARNING: the ledger's limits in force changed with this start (--change-limits): they were %s since %s and are now %s; "+
			"every curator sharing the ledger enforces them from its next charge, and curator ledger marks spending above a lowered limit OVER LIMIT\n",
			ledger.LimitsText(p.Limits), p.Recorded.Format(time.RFC3339), ledger.LimitsText(srv.LimitsStart().InForce.Limits))
	}
	for _, line := range srv.PatientStatement() {
		fmt.Fprintln(os.Stderr, "curator:", flagText(line))
	}
	study := srv.DefaultStudy()
	fmt.Fprintln(os.Stderr, "curator:", flagText(study.Statement()))
	if w := server.StudyWarning(study); w != "" {
		fmt.Fprintln(os.Stderr, "curator:", flagText(w))
	}
	if f.addrFile != "" {
		if err := os.WriteFile(f.addrFile, []byte(srv.Addr()+"\n"), 0o644); err != nil {
			srv.Shutdown(context.Background())
			return fmt.Errorf("writing --addr-file: %w", err)
		}
	}
	select {
	case <-ctx.Done():
		// A second signal now stops the process at once (the ledger's transactions
		// make that safe); the first one drains.
		stop()
		log.Info("signal received; draining (send it again to stop at once)", zap.Duration("deadline", cfg.ShutdownTimeout))
		return srv.Shutdown(context.Background())
	case err := <-srv.Done():
		srv.Shutdown(context.Background())
		return err
	}
}

// checkConfig validates a configuration as serve would, without serving or writing.
func checkConfig(args []string) error {
	f, err := parseServe("curator check-config", args)
	if err != nil {
		return err
	}
	cfg, err := f.build()
	if err != nil {
		return err
	}
	if _, err := logging.New(f.logLevel, f.logFormat); err != nil {
		return err
	}
	rep, err := server.CheckReport(cfg)
	if err != nil {
		return err
	}
	for _, w := range append(config.Warnings(cfg), rep.Warnings...) {
		fmt.Fprintln(os.Stderr, "curator:", flagText(w))
	}
	fmt.Println("configuration OK:", flagText(rep.Summary))
	return nil
}

// relationNote says which other relations' releases a relation's totals include.
func relationNote(rel ledger.Relation) string {
	var from []string
	for _, r := range ledger.Relations {
		if r != rel && r.Implies(rel) {
			from = append(from, string(r))
		}
	}
	if len(from) == 0 {
		return ""
	}
	return " (including the " + strings.Join(from, ", ") + " releases, which also hold under it)"
}

func devCA(args []string) error {
	fs := flag.NewFlagSet("curator dev-ca", flag.ContinueOnError)
	out := fs.String("out", "", "directory for the CA, server and client certificates (required)")
	hosts := fs.String("hosts", "127.0.0.1,localhost", "comma-separated server host names and addresses")
	clients := fs.String("clients", "", "comma-separated modeler identities to issue client certificates for")
	valid := fs.Duration("valid-for", 30*24*time.Hour, "validity of the certificates")
	force := fs.Bool("force", false, "replace a CA already in --out")
	if err := cli.Parse(fs, args, os.Stdout); err != nil {
		return err
	}
	if err := cli.CheckFlags(fs, map[string]cli.Rule{"valid-for": cli.PositiveDuration}); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("dev-ca: --out is required")
	}
	var ids []string
	if *clients != "" {
		ids = strings.Split(*clients, ",")
	}
	for _, id := range ids {
		if err := transport.ValidateIdentity(id); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(*out, "ca.pem")); err == nil && !*force {
		return fmt.Errorf("dev-ca: %s already holds a CA; replacing it would invalidate every certificate it issued (--force replaces it)", *out)
	}
	if err := devca.Create(*out, strings.Split(*hosts, ","), ids, *valid); err != nil {
		return err
	}
	fmt.Printf("wrote a development CA and certificates to %s (for demos and tests, not production)\n", *out)
	return nil
}

func hashToken(args []string) error {
	fs := flag.NewFlagSet("curator hash-token", flag.ContinueOnError)
	id := fs.String("identity", "", "identity the token stands for (required)")
	if err := cli.Parse(fs, args, os.Stdout); err != nil {
		return err
	}
	if err := transport.ValidateIdentity(*id); err != nil {
		return err
	}
	tok, err := io.ReadAll(io.LimitReader(os.Stdin, 4096))
	if err != nil {
		return err
	}
	t := strings.TrimSpace(string(tok))
	if len(t) < 16 {
		return errors.New("hash-token: read a token of at least 16 characters from stdin")
	}
	fmt.Printf("%s %s\n", *id, transport.HashToken(t))
	return nil
}

// evaluationStore opens the ledger for recording evaluations. Recorded values cost
// nothing, so the budget limits the store is opened with play no part.
func evaluationStore(fs *flag.FlagSet, args []string) (*ledger.Ledger, string, *flag.FlagSet, error) {
	var lf ledgerFlags
	lf.register(fs)
	name := fs.String("dataset-id", "", "dataset id, as the curator's --dataset-id (required)")
	alias := fs.String("dataset", "", "the same as --dataset-id (older name of the flag)")
	if err := cli.Parse(fs, args, os.Stdout); err != nil {
		return nil, "", nil, err
	}
	if err := cli.CheckFlags(fs, ledgerRules); err != nil {
		return nil, "", nil, err
	}
	if *alias != "" {
		*name = *alias
	}
	if *name == "" || lf.state == "" && lf.kind == "sqlite" {
		return nil, "", nil, errors.New("--dataset-id and --state (or --ledger postgres) are required")
	}
	lc, _, _ := lf.config()
	placeholder := ledger.Cost{Epsilon: 1}
	store, err := storage.OpenLedger(context.Background(), lc, lf.state, ledger.Limits{PerIdentity: placeholder, Dataset: placeholder})
	return store, *name, fs, err
}

func pending(args []string) error {
	store, name, _, err := evaluationStore(flag.NewFlagSet("curator pending", flag.ContinueOnError), args)
	if err != nil {
		return err
	}
	defer store.Close()
	rows, err := curator.PendingEvaluations(context.Background(), store, name)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		fmt.Println("no rows are waiting for an evaluation")
		return nil
	}
	for _, i := range rows {
		fmt.Println(i)
	}
	return nil
}

func record(args []string) error {
	fs := flag.NewFlagSet("curator record", flag.ContinueOnError)
	index := fs.Int("index", -1, "row index (required)")
	value := fs.Float64("value", math.NaN(), "evaluated value (required)")
	store, name, _, err := evaluationStore(fs, args)
	if err != nil {
		return err
	}
	defer store.Close()
	if *index < 0 || math.IsNaN(*value) || math.IsInf(*value, 0) {
		return errors.New("record: --index ≥ 0 and a finite --value are required")
	}
	rows, err := curator.PendingEvaluations(context.Background(), store, name)
	if err != nil {
		return err
	}
	if !slices.Contains(rows, *index) {
		return fmt.Errorf("record: row %d is not waiting for an evaluation (see 'curator pending'); recorded values are final, so only pending rows are accepted", *index)
	}
	if err := curator.RecordEvaluation(context.Background(), store, name, *index, *value); err != nil {
		return err
	}
	fmt.Printf("recorded row %d = %g\n", *index, *value)
	return nil
}
