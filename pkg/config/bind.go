package config

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/privbo/privbo/internal/setting"
	"github.com/privbo/privbo/pkg/curator"
)

// BindLedger declares the settings of the privacy ledger and its limits, which curator
// ledger, pending, record and results share with serve: each setting once, with its
// field, its name (the flag, the configuration file's key and the environment
// variable's suffix), its help and its range; its default is c's value (NewConfig's).
func (c *Config) BindLedger() *setting.Set {
	return setting.New(
		setting.String(&c.StateDir, "state", "directory for state that must survive restarts: ledger, released matrices (required)"),
		setting.String(&c.Ledger.Kind, "ledger", "privacy ledger store: sqlite (in --state) or postgres"),
		setting.String(&c.Ledger.DSN, "ledger-dsn", "PostgreSQL connection string, for --ledger postgres"),
		setting.String(&c.Ledger.Schema, "ledger-schema", "PostgreSQL schema of the ledger tables"),
		setting.Duration(&c.Ledger.CallTimeout, "ledger-timeout", setting.PositiveDuration, "bound on each call to the PostgreSQL ledger, connecting included: a call the database "+
			"does not answer within it fails at once (UNAVAILABLE to the client); it must exceed the slowest charge under load"),
		setting.Float(&c.Budget.Epsilon, "budget-epsilon", setting.Positive, "privacy budget ε of each modeler identity (required by serve)"),
		setting.Float(&c.Budget.Delta, "budget-delta", setting.ZeroTo1, "privacy budget δ of each modeler identity: small against 1/n (the number of records); 0 allows only pure ε-DP releases and refuses the default Gaussian projection (warned about)"),
		setting.Float(&c.DatasetBudget.Epsilon, "dataset-budget-epsilon", setting.Positive.Why("leave it unset for --budget-epsilon"), "ε cap over all identities together (default: --budget-epsilon)"),
		setting.Float(&c.DatasetBudget.Delta, "dataset-budget-delta", setting.Open01.Why("leave it unset for --budget-delta; --budget-delta 0 for no δ at all"), "δ cap over all identities together (default: --budget-delta)"),
		setting.Float(&c.PatientBudget.Epsilon, "patient-budget-epsilon", setting.NonNegative.Why("0 for no whole-patient cap"), "cap on what one patient can lose to one identity, over every relation: the ε of its whole-patient total "+
			"(each release's (ε, δ) for replacing one patient's record by any other, added up); 0: no cap, the default (at the default unit one projection at ε=1 costs a whole patient ε≈134: "+
			"see docs/PRIVACY.md, and --scaling '...;unit=50' for releases whose ε is the whole patient's); a cap refuses releases with no finite whole-patient figure"),
		setting.Float(&c.PatientBudget.Delta, "patient-budget-delta", setting.ZeroTo1, "δ of the whole-patient cap of each identity (default: --budget-delta)"),
		setting.Float(&c.PatientDatasetBudget.Epsilon, "patient-dataset-budget-epsilon", setting.NonNegative.Why("leave it unset for --patient-budget-epsilon"), "cap on what one patient can lose to all identities together (and the curator's own estimates): ε (default: --patient-budget-epsilon)"),
		setting.Float(&c.PatientDatasetBudget.Delta, "patient-dataset-budget-delta", setting.ZeroTo1, "δ of the whole-patient cap of the dataset (default: the per-identity cap's)"),
	)
}

// Bind declares every setting of c as BindLedger does. Resolve checks c against the
// same ranges (a zero field is unset), so that a library caller and the command line
// are refused alike, and the refusals and warnings name each setting by its flag
// (Flag).
func (c *Config) Bind() *setting.Set {
	return c.BindLedger().With(
		setting.Bool(&c.ChangeLimits, "change-limits", "make this start's budget flags the limits in force when they differ from those the ledger records "+
			"(every curator sharing the ledger enforces them from its next charge; curator ledger lists the change); without it such a start is refused"),
		setting.String(&c.DataPath, "data", "CSV file with a header row, or a .parquet file (required)"),
		setting.String(&c.Data.Target, "target", "column holding the objective f(x) (required)"),
		setting.Float(&c.PrivateScalingShare, "private-scaling-share", setting.Open01, "fraction in (0, 1) of --budget-epsilon (and of the δ budget) spent once, at the first start, on estimating privately what no public source gives: the feature bounds (--scaling private, the default without --schema) and, with them, the target's range of private answers; charged to the dataset cap under the identity _curator. The start forecasts the estimate's quality from the number of rows and columns: coarse is warned about, poor is refused (also by check-config)"),
		setting.Bool(&c.EstimateTargetRange, "estimate-target-range", "with a public scaling (--schema, fixed, none) whose schema has no line for the target, and private answers without --output-lower/--output-upper: estimate the target's range privately (--private-scaling-share of the budget) instead of refusing to start"),
		setting.String(&c.DatasetID, "dataset-id", "stable identity of the dataset, declared by the operator (required): budgets are kept per dataset id, so renaming or moving the file never resets them; keep it for as long as these records are served"),
		setting.String(&c.DatasetName, "name", "display name of the dataset shown to modelers (default: the file name); budgets are kept per --dataset-id, not per name"),
		setting.String(&c.Listen, "listen", "TCP address to serve on"),
		setting.Float(&c.NoiseSD, "noise-sd", setting.NonNegative, "standard deviation of Gaussian observation noise recorded once per row (simulated measurement noise, not privacy)"),
		setting.String(&c.Evaluation.Mode, "evaluate", "how a row is evaluated: column (the target), program (--evaluate-program per row) or manual (a person records it: curator pending / curator record)"),
		setting.Duration(&c.Evaluation.Timeout, "evaluate-timeout", setting.PositiveDuration, "time limit of one program evaluation"),
		setting.String(&c.Output.Mechanism, "output-privacy", "release of query answers: laplace or gaussian (differentially private: answers are clipped to the target's range from --output-lower/--output-upper, else the --schema target line, else a private estimate), or none (exact, unprotected answers: no guarantee at all; warned about, capped by --exact-answers-max-rows, only to identities holding a projection)"),
		setting.Float(&c.Output.Epsilon, "output-epsilon", setting.Positive, "ε of each private answer; one identity's answers compose in parallel (each record influences one answer), so this is what all of an identity's answers cost, charged once"),
		setting.Float(&c.Output.Delta, "output-delta", setting.ZeroTo1, "δ of each gaussian answer, charged once per identity like --output-epsilon"),
		setting.Float(&c.Output.Lower, "output-lower", setting.Finite, "lower end of the declared range of the target for private outputs (answers are clipped to it); overrides the schema's target line"),
		setting.Float(&c.Output.Upper, "output-upper", setting.Finite, "upper end of the declared range of the target for private outputs; overrides the schema's target line"),
		setting.Float(&c.DefaultStudy.Epsilon, "study-epsilon", setting.Positive.Why("leave it unset for the default study's"), fmt.Sprintf("ε of the default study's projection, quoted to modelers that name none (default %g)", curator.DefaultStudyEpsilon)),
		setting.Float(&c.DefaultStudy.Delta, "study-delta", setting.Open01.Why("leave it unset for the default study's share of the δ budget"), "δ of the default study's projection (default: the share of the δ budgets that holds as many default studies as the ε budgets)"),
		setting.Int(&c.ExactAnswersMaxRows, "exact-answers-max-rows", setting.AtLeast(1), "with --output-privacy none: the most distinct rows of the dataset answered exactly, to all identities together"),
		setting.Bool(&c.AllowExactProgramAnswers, "allow-exact-program-answers", "accept --evaluate program with --output-privacy none, whose answers are exact functions of each queried record's features (refused otherwise)"),
		setting.Int(&c.MaxQueryIndices, "max-query-indices", setting.AtLeast(1), "maximum indices in one query"),
		setting.Int(&c.MaxProjectionDim, "max-projection-dim", setting.AtLeast(1), "maximum projection dimension r"),
		setting.String(&c.ProjectionMechanism, "projection-mechanism", "how projections are made private: gaussian (the projection plus Gaussian noise: (ε, δ)-DP against any adversary) or lifted (the paper's Algorithm 1, for reproducing it: no noise, the release is the data times a fixed matrix, so its (ε, δ) claim fails and a modeler who knows d+1 rows recovers linear measurements of every other row)"),
		setting.Bytes(&c.MemoryLimit, "memory-limit", setting.BytesAtLeast(128<<20).Why("leave it unset for the container's or the machine's"), "memory the curator may use in all, such as 2GiB (default: the container's cgroup memory limit, else the machine's physical memory); the Go runtime's soft limit is set to 90% of it unless GOMEMLIMIT is set, and --release-memory's default derives from it"), // rule setting.BytesAtLeast(128 << 20).Why("leave it unset for the container's or the machine's"),
		setting.Bytes(&c.ReleaseMemory, "release-memory", setting.BytesAtLeast(curator.MinMemory).Why("leave it unset for a share of --memory-limit"), "memory the releases being computed, stored and streamed may hold together, such as 1GiB: a new release is computed once what it needs (known from n, d, r, the mechanism and the store) fits beside the others, waiting its turn within its request's deadline, and one needing more than all of it is refused (RESOURCE_EXHAUSTED, reason MEMORY_LIMIT, naming the largest r that fits) (default: 75% of --memory-limit less the dataset and 64MiB for the runtime)"), // rule setting.BytesAtLeast(curator.MinMemory).Why("leave it unset for a share of --memory-limit"),
		setting.Bytes(&c.StoredBytesPerIdentity, "stored-bytes-per-identity", setting.BytesAtLeast(64<<10).Why("leave it unset for 16 widest releases"),
			"bytes one identity's releases may keep for replay (a projection stores 8·n·r), such as 2GiB: a new release past it is refused (RESOURCE_EXHAUSTED, reason STORED_BYTES) "+
				"and replays still work (default: 16 widest releases, 16·8·n·d bytes, or 16·8·n·--max-projection-dim under the lifted mechanism, at least 64MiB; the README)"),
		setting.Bytes(&c.StoredBytesPerDataset, "stored-bytes-per-dataset", setting.BytesAtLeast(64<<10).Why("leave it unset for 8 identities' worth"),
			"bytes all identities' releases may keep for replay together, in the release store (default: 8 times --stored-bytes-per-identity's default)"),
		setting.Duration(&c.ShutdownTimeout, "shutdown-timeout", setting.PositiveDuration, "how long in-flight requests may run after SIGTERM"),
		setting.String(&c.TLS.CertFile, "tls-cert", "server certificate (PEM); serves TLS"),
		setting.String(&c.TLS.KeyFile, "tls-key", "server private key (PEM)"),
		setting.String(&c.TLS.ClientCAFile, "client-ca", "CA (PEM) whose client certificates identify modelers (mutual TLS)"),
		setting.String(&c.TokensFile, "tokens", "bearer-token file: \"IDENTITY SHA256HEX\" lines (see 'curator hash-token')"),
		setting.Bool(&c.AllowPlaintext, "allow-plaintext", "serve plaintext on a non-loopback address (only behind a TLS-terminating proxy)"),
		setting.Bool(&c.TrustIdentityHeaderFromNetwork, "trust-identity-header-from-network", "serve on a non-loopback address without --client-ca or --tokens, charging whatever identity each caller names in its privbo-identity header: anyone who can reach --listen can spend any identity's budget (only behind something that authenticates callers and sets the header; warned about)"),
		setting.Float(&c.Limits.Rate, "rate-limit", setting.NonNegative, "requests per second per identity (0: unlimited)"),
		setting.Int(&c.Limits.Burst, "rate-burst", setting.AtLeast(1).Why("leave it unset for the rate"), "burst of requests per identity (default: the rate)"),
		setting.Int(&c.Limits.Concurrent, "max-in-flight", setting.AtLeast(0), "concurrent requests per identity (0: unlimited)"),
		setting.Int(&c.Streams.PerIdentity, "max-streams-per-identity", setting.AtLeast(1), "release streams (projections being sent, replays included) one identity may have open at once; "+
			"each holds up to 9MiB of --release-memory, so one identity holds at most this many times 9MiB; one more is refused with a retry hint before anything is computed or charged"),
		setting.Duration(&c.Streams.IdleTimeout, "stream-idle-timeout", setting.PositiveDuration, "how long a release stream may wait for its client to read: "+
			"a stream whose client reads nothing for as long is cut and its memory given back (the client may ask again: a replay costs nothing)"),
		setting.Float(&c.AuthFailures.Rate, "auth-failure-rate", authFailureRate, "failed authentications per second one peer (IPv4 address or IPv6 /64) may cause after its burst; beyond, its requests are refused before authentication (negative: no throttle)"),
		setting.Int(&c.AuthFailures.Burst, "auth-failure-burst", setting.AtLeast(1), "failed authentications one peer may cause at once"),
		setting.Int(&c.AuthFailures.Logged, "auth-failures-logged", setting.AtLeast(1), "failed or refused requests of one peer logged a line each per --auth-failure-log-interval; the rest are summarised in one line"),
		setting.Duration(&c.AuthFailures.LogInterval, "auth-failure-log-interval", setting.PositiveDuration, "interval of --auth-failures-logged"),
		setting.Int(&c.AuthFailures.MaxPeers, "auth-failure-peers", setting.AtLeast(1), "peers with recent failed authentications remembered (the least recent is forgotten beyond)"),
		setting.Int(&c.MaxHeaderBytes, "max-header-bytes", setting.AtLeast(1024), "largest request headers (metadata) accepted, in bytes; read before authentication"),
		setting.String(&c.MetricsListen, "metrics-listen", "serve Prometheus metrics at http://ADDR/metrics"),
		setting.String(&c.ConsoleListen, "console-listen", "serve the privacy officer's read-only console at ADDR/ (whole-patient totals, budgets, limits history, releases, jobs, each study's true outcomes): plain HTTP on loopback only; elsewhere it needs --tls-cert, --tls-key, --client-ca and --console-operators"),
		setting.Var(&c.ConsoleOperators, (*identities)(&c.ConsoleOperators), "console-operators", nil, "comma-separated `identities` (client certificates' common names, from --client-ca) the console serves over TLS; required when --console-listen is not loopback"),
		setting.Bool(&c.Jobs.Enabled, "jobs", "accept private hyperparameter-tuning jobs on this dataset (the target must be a class label: 0/1, or 0 … K−1 with K from the schema's target bounds [0, K−1])"),
		setting.Float(&c.Jobs.ValidationFraction, "job-validation-fraction", setting.Open01, "fraction of rows forming the sensitive validation part of tuning jobs"),
		setting.Uint64(&c.Jobs.SplitSeed, "job-split-seed", "seed of the training/validation split of tuning jobs"),
		setting.Int(&c.Jobs.MaxGrid, "max-job-grid", setting.AtLeast(1), "largest hyperparameter grid a job may search"),
		setting.Int(&c.Jobs.MaxIterations, "max-job-iterations", setting.AtLeast(1), "most iterations (or expected runs) of a job"),
		setting.Float(&c.Jobs.Kusner.K1, "kusner-k1", setting.ZeroTo1, "Kusner jobs: the dataset-kernel value k1(V, V') of neighbouring validation sets, in [0, 1); 0 is the most conservative"),
		setting.Float(&c.Jobs.Kusner.NoiseVariance, "kusner-noise-variance", setting.Positive, "Kusner jobs: observation noise variance σ² of Algorithm 1"),
		setting.Float(&c.Jobs.Kusner.GammaT, "kusner-gamma-t", setting.NonNegative, "Kusner jobs: a known bound on the information gain γ_T (0: the greedy upper bound)"),
		setting.Float(&c.Jobs.Kusner.A, "kusner-a", setting.NonNegative, "Kusner jobs: regret constant A of Algorithm 2 (unset: Algorithm 2 refused)"),
		setting.Float(&c.Jobs.Kusner.Tau, "kusner-tau", setting.NonNegative, "Kusner jobs: regret constant τ of Algorithm 2 (unset: Algorithm 2 refused)"),
		setting.Int(&c.Jobs.MaxRunning, "max-running-jobs", setting.AtLeast(1), "jobs run at once; others wait queued"),
		setting.Duration(&c.Jobs.Lease, "job-lease", setting.DurationAtLeast(time.Second, "a replica renews its jobs' leases every third of it, and a shorter lease lets a slow renewal hand a live replica's job to another"), "with --ledger postgres: how long a replica's claim on a running job lasts unrenewed (renewed every third of it); a job whose replica died runs again on another within about 4/3 of it"),
		setting.Float(&c.Jobs.BoundsEpsilon, "job-bounds-epsilon", setting.NonNegative, "DP-HyPO jobs with the built-in learner, when the schema gives no public bounds for every feature: ε each job spends estimating them privately (added to its cost); 0 refuses such jobs"),
		setting.Int(&c.Jobs.Classes, "job-classes", jobClasses, "tuning jobs: the public number K of classes of the target's labels 0 … K−1 (0: from the schema's target line — its categories, or bounds [0, K−1] — else 2, 0/1 labels)"),
		setting.Bool(&c.Jobs.TrainingConsented, "job-training-consented", "declare that every patient of the tuning jobs' training part consented to their records being used "+
			"without a privacy guarantee (or that the part is public): Kusner jobs, which train on it with no mechanism, then have a whole-patient figure for the patients they do protect; "+
			"without it their whole-patient figure is not bounded and a whole-patient cap refuses them"),
		setting.String((*string)(&c.Jobs.Preprocessing), "job-preprocessing", "DP-HyPO's built-in learner: bounded (default: public schema bounds or private estimates) or standardise-nonprivate (no privacy guarantee)"),
		// Settings the command binds itself: lists, the scaling and its schema, the
		// evaluators.
		setting.Named(&c.Data.Features, "features"), setting.Named(&c.Data.Exclude, "exclude"),
		setting.Named(&c.Data.MissingMarkers, "missing-markers"), setting.Named(&c.Data.Scaling.Mode, "scaling"),
		setting.Named(&c.Data.Scaling.Schema, "schema"), setting.Named(&c.Evaluation.Command, "evaluate-program"),
		setting.Named(&c.Jobs.Evaluators, "evaluators"),
	)
}

// Flag is the setting of field (the address of one of c's fields) as an operator writes
// it: "--output-epsilon".
func (c *Config) Flag(field any) string { return c.Bind().Flag(field) }

// authFailureRate: finite and not 0 (negative: no throttle).
func authFailureRate(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v == 0 {
		return errors.New("must be finite and not 0 (negative: no throttle)")
	}
	return nil
}

// jobClasses: 0 (from the schema) or at least 2.
func jobClasses(v int) error {
	if v != 0 && v < 2 {
		return errors.New("must be 0 (from the schema's target line, else 2) or at least 2")
	}
	return nil
}
