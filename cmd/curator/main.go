// Command curator runs privbo's curator: a gRPC daemon that serves differentially private
// releases of a sensitive dataset and charges each to a durable privacy ledger.
//
//	curator serve  --data FILE --target COLUMN --dataset-id ID --state DIR --budget-epsilon E --budget-delta D
//	               [--schema FILE.schema.csv] [flags]
//	curator ledger --state DIR --dataset-id ID [--json | --csv]
//	curator results --state DIR --dataset-id ID [--identity X] [--json]
package main

import (
	"cmp"
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
	"github.com/privbo/privbo/internal/setting"
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

// commands are curator's commands, in the order its usage lists them.
var commands = []cli.Command{
	{Name: "serve", Help: "load a dataset and serve private releases over gRPC", Run: plain(serve)},
	{Name: "ledger", Help: "print the privacy ledger: every charge, and each identity's remaining budget", Run: plain(printLedger)},
	{Name: "results", Help: "the hospital's view of each study: the rows evaluated, their true outcome and rank (local, no privacy cost)", Run: plain(results)},
	{Name: "pending", Help: "list the rows waiting for a recorded evaluation (--evaluate manual)", Run: plain(pending)},
	{Name: "record", Help: "record the evaluation of a pending row", Run: plain(record)},
	{Name: "check-config", Help: "validate a serve configuration (flags, file, environment) without serving", Run: plain(checkConfig)},
	{Name: "dev-ca", Help: "create a development CA, a server certificate and client certificates", Run: plain(devCA)},
	{Name: "hash-token", Help: "print the line of a token file for a bearer token read from stdin", Run: plain(hashToken)},
	{Name: "job-report", Help: "write a job's operator report (HTML), with the path the modeler never sees", Run: plain(jobReport)},
}

// plain adapts a command that writes to the process's own stdout and stderr.
func plain(run func(args []string) error) func([]string, io.Writer, io.Writer) error {
	return func(args []string, _, _ io.Writer) error { return run(args) }
}

func main() {
	err := run(os.Args[1:])
	if cli.ExitCode(err) != 0 {
		fmt.Fprintln(os.Stderr, "curator:", err)
	}
	os.Exit(cli.ExitCode(err))
}

// run runs a command.
func run(args []string) error { return cli.Dispatch("curator", commands, args, os.Stdout, os.Stderr) }

// ledgerFlags are the ledger settings serve shares with ledger, pending, record and
// results: cfg's fields, declared by config.Config.BindLedger.
type ledgerFlags struct {
	cfg *config.Config
	set *setting.Set
}

func (l *ledgerFlags) register(fs *flag.FlagSet) {
	cfg := config.NewConfig()
	l.cfg = &cfg
	l.set = cfg.BindLedger()
	l.set.Register(fs)
}

// limits are the ledger limits the flags set, with the defaults serve fills in (each
// part of the dataset cap defaults to the identity budget's on its own).
func (l *ledgerFlags) limits() ledger.Limits {
	per, ds := l.cfg.Budget, l.cfg.DatasetBudget
	ds.Epsilon, ds.Delta = cmp.Or(ds.Epsilon, per.Epsilon), cmp.Or(ds.Delta, per.Delta)
	p, pd := config.PatientCaps(per, l.cfg.PatientBudget, l.cfg.PatientDatasetBudget)
	return ledger.Limits{PerIdentity: per, Dataset: ds, Patient: ledger.PatientLimits{PerIdentity: p, Dataset: pd}}
}

// serveFlags are the flags of serve and check-config: cfg's settings (config.Config.Bind,
// with config.NewConfig's defaults) and what only the command line has.
type serveFlags struct {
	cfg                           config.Config
	settings                      *setting.Set
	lf                            ledgerFlags // cfg's ledger settings
	configFile                    string
	features, scaling, addrFile   string
	exclude, missingMarkers       string
	schema                        schemaValue
	logLevel, logFormat           string
	evaluators, evaluatorEpsilons string
	evaluatorRDP                  string
	evaluatorTimeout              time.Duration
	evaluateProgram               string
	// set holds the flags given on the command line, in the environment or in the
	// configuration file.
	set map[string]bool
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	f.cfg = config.NewConfig()
	cfg := &f.cfg
	f.lf = ledgerFlags{cfg: cfg, set: cfg.BindLedger()}
	f.evaluatorTimeout = curator.DefaultEvaluationTimeout
	f.settings = cfg.Bind().With(setting.Duration(&f.evaluatorTimeout, "evaluator-timeout", setting.PositiveDuration, "time limit of one external evaluation"))
	f.settings.Register(fs)
	// The settings the command parses itself, under their declared names.
	name := f.settings.Name
	fs.StringVar(&f.features, name(&cfg.Data.Features), "", "comma-separated feature columns (default: all but the target and --exclude)")
	fs.StringVar(&f.exclude, name(&cfg.Data.Exclude), "", "comma-separated columns to leave out (a text label, an identifier); a text column can instead be a categorical feature, one-hot encoded from the public categories its --schema line lists")
	fs.StringVar(&f.missingMarkers, name(&cfg.Data.MissingMarkers), strings.Join(dataset.DefaultMissingMarkers, ","), "comma-separated cell texts read as a missing value (without case; an empty cell always is): "+
		"a feature's missing cell takes the public value of its --schema line's missing field (missing_indicator yes adds a 0/1 feature column=missing), and is refused without one; "+
		"a row whose target is missing is no candidate and is dropped")
	fs.StringVar(&f.scaling, name(&cfg.Data.Scaling.Mode), "", "how rows are put on the protected unit (default: schema with --schema, else private): schema:FILE (public bounds or scales per column), private[:EPS] (bounds estimated with DP at the first start, charged to the dataset cap, see --private-scaling-share), fixed:col=scale[@offset],..., none (these clip rows to norm 25; options ;clip=R;unit=U), or standardise-nonprivate[:MAXNORM] / maxnorm-nonprivate[:MAXNORM], which scale with the data's own statistics so the (ε, δ) claim does NOT hold (warned about)")
	fs.Var(&f.schema, name(&cfg.Data.Scaling.Schema), "public schema CSV (column,lower,upper or column,scale,offset lines, optionally categories, missing, missing_indicator, transform; e.g. examples/data/diabetes.schema.csv): scales the features with public bounds, and its target line gives the range of private answers; the same as --scaling schema:FILE. In the configuration file, also the schema itself as [[schema.column]] tables (name, lower, upper or scale, offset; missing, missing_indicator, transform)")
	fs.StringVar(&f.evaluateProgram, name(&cfg.Evaluation.Command), "", "program evaluating one row: {\"index\": i, \"features\": {...}} on stdin, a number on stdout")
	fs.StringVar(&f.evaluators, name(&cfg.Jobs.Evaluators), "", "external evaluators for jobs: NAME=PROGRAM[,NAME=PROGRAM] (hyperparameters as JSON on stdin, {\"score\": x} on stdout)")
	fs.StringVar(&f.configFile, "config", "", "configuration file: TOML whose keys are the flags' names, flag-name = value (arrays are joined by commas); flags and PRIVBO_CURATOR_* environment variables override it")
	fs.StringVar(&f.addrFile, "addr-file", "", "write the listening address to this file once serving (useful with port 0)")
	fs.StringVar(&f.evaluatorEpsilons, "evaluator-epsilons", "", "declared per-run pure-DP ε of evaluators usable by DP-HyPO: NAME=EPS[,NAME=EPS]")
	fs.StringVar(&f.evaluatorRDP, "evaluator-rdp", "", "declared per-run Rényi-DP curve of evaluators usable by DP-HyPO: NAME=ALPHA:EPS/ALPHA:EPS/...[,NAME=...]")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.logFormat, "log-format", "", "log format: text or json (default: text when standard error is a terminal, json otherwise)")
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
	f.configFile = cmp.Or(f.configFile, os.Getenv(flagconf.EnvName(envPrefix, "config")))
	if err := flagconf.Apply(fs, f.configFile, envPrefix); err != nil {
		return nil, err
	}
	if err := f.settings.CheckFlags(fs); err != nil {
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
	data, err := f.data()
	if err != nil {
		return cfg, err
	}
	cfg.Data = data
	if answer.IsExact(cfg.Output.Mechanism) && !f.set[f.settings.Name(&f.cfg.Output.Epsilon)] {
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

// data is how the data file is read: cfg's options with the lists and the scaling the
// command parses itself.
func (f *serveFlags) data() (dataset.Options, error) {
	opt := f.cfg.Data
	if f.features != "" {
		opt.Features = strings.Split(f.features, ",")
	}
	if f.exclude != "" {
		opt.Exclude = strings.Split(f.exclude, ",")
	}
	opt.MissingMarkers = strings.Split(f.missingMarkers, ",")
	sc, err := scalingOf(f.scaling, &f.schema)
	opt.Scaling = sc
	return opt, err
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
	// Start logs every notice once, in the one format of --log-format.
	cfg.Logger = log

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
		fmt.Fprintln(os.Stderr, "curator:", w)
	}
	fmt.Println("configuration OK:", rep.Summary)
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
	add := fs.String("add-client", "", "comma-separated identities to add client certificates for, from the CA already in --out")
	valid := 30 * 24 * time.Hour
	settings := setting.New(setting.Duration(&valid, "valid-for", setting.PositiveDuration, "validity of the certificates"))
	settings.Register(fs)
	force := fs.Bool("force", false, "replace a CA already in --out")
	if err := cli.Parse(fs, args, os.Stdout); err != nil {
		return err
	}
	if err := settings.CheckFlags(fs); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("dev-ca: --out is required")
	}
	if *add != "" && (*clients != "" || *force) {
		return errors.New("dev-ca: --add-client adds to the CA in --out; it goes with neither --clients nor --force")
	}
	var ids []string
	if list := max(*clients, *add); list != "" {
		ids = strings.Split(list, ",")
	}
	for _, id := range ids {
		if err := transport.ValidateIdentity(id); err != nil {
			return err
		}
	}
	if *add != "" {
		for _, id := range ids {
			if err := devca.AddClient(*out, id, valid); err != nil {
				return err
			}
			c, k := devca.ClientFiles(id)
			fmt.Printf("wrote a client certificate for %s to %s and %s\n", id, filepath.Join(*out, c), filepath.Join(*out, k))
		}
		return nil
	}
	if _, err := os.Stat(filepath.Join(*out, devca.CAFile)); err == nil && !*force {
		return fmt.Errorf("dev-ca: %s already holds a CA; --add-client NAME adds a client certificate from it, --force replaces it (which invalidates every certificate it issued)", *out)
	}
	if err := devca.Create(*out, strings.Split(*hosts, ","), ids, valid); err != nil {
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

// evaluationStore opens the ledger for recording evaluations (readLedger).
func evaluationStore(fs *flag.FlagSet, args []string) (*ledger.Ledger, string, error) {
	var lf ledgerFlags
	lf.register(fs)
	name := fs.String("dataset-id", "", "dataset id, as the curator's --dataset-id (required)")
	alias := fs.String("dataset", "", "the same as --dataset-id (older name of the flag)")
	if err := cli.Parse(fs, args, os.Stdout); err != nil {
		return nil, "", err
	}
	if err := lf.set.CheckFlags(fs); err != nil {
		return nil, "", err
	}
	*name = cmp.Or(*alias, *name)
	store, err := readLedger(fs, lf, *name)
	return store, *name, err
}

// readLedger opens the ledger of lf for the command of fs, which reads it or records
// evaluations: neither charges, so the budget limits it is opened with play no part. A
// SQLite ledger must exist already: reading never creates an empty one.
func readLedger(fs *flag.FlagSet, lf ledgerFlags, datasetID string) (*ledger.Ledger, error) {
	if datasetID == "" || lf.cfg.StateDir == "" && lf.cfg.Ledger.Kind == "sqlite" {
		where := ""
		if fs.Lookup("config") != nil {
			where = ", on the command line or in --config"
		}
		return nil, fmt.Errorf("%s: --dataset-id and --state (or --ledger postgres with --ledger-dsn) are required%s", fs.Name(), where)
	}
	lc := lf.cfg.Ledger
	if lc.Kind == "sqlite" {
		if _, err := os.Stat(filepath.Join(lf.cfg.StateDir, "ledger.db")); err != nil {
			return nil, fmt.Errorf("%s: no ledger in --state %s: %w", fs.Name(), lf.cfg.StateDir, err)
		}
	}
	placeholder := ledger.Cost{Epsilon: 1}
	return storage.OpenLedger(context.Background(), lc, lf.cfg.StateDir, ledger.Limits{PerIdentity: placeholder, Dataset: placeholder})
}

func pending(args []string) error {
	store, name, err := evaluationStore(flag.NewFlagSet("curator pending", flag.ContinueOnError), args)
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
	store, name, err := evaluationStore(fs, args)
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
