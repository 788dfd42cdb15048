package curator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/blob"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/evaluator"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/memory"
	"github.com/privbo/privbo/pkg/noise"
	"github.com/privbo/privbo/pkg/projection"
)

// ErrInvalidArgument marks errors caused by a request that can never succeed as sent.
var ErrInvalidArgument = errors.New("invalid argument")

// CuratorIdentity is the ledger identity of the curator's own zero-cost records (the
// recorded evaluation of each row). Caller identities never start with '_'.
const CuratorIdentity = ledger.ReservedIdentityPrefix + "curator"

// Config configures a Curator.
type Config struct {
	// Dataset is the loaded, scaled dataset. Required.
	Dataset *dataset.Dataset
	// DatasetID is the operator-declared, stable identity of the dataset: the ledger
	// keeps every budget under it (ledger.Account.Dataset), so the same records keep
	// their spent budget whatever their file or display name (Dataset.Name) is. Default:
	// Dataset.Name, for simulations and tests; the curator daemon requires it.
	DatasetID string
	// Ledger charges and stores every release (a *ledger.Ledger). Required.
	Ledger Ledger
	// Releases keeps the released matrices, each written durably before its release
	// is charged, and read back to replay it. Default: the files of StateDir/releases
	// (blob.Dir). Curator replicas sharing a PostgreSQL ledger give its blob store
	// (pgledger.Blobs), so that any replica replays any release.
	Releases blob.Store
	// StateDir holds the released matrices when Releases is nil (StateDir/releases).
	// Required then.
	StateDir string
	// NoiseSD is the standard deviation of Gaussian observation noise added once to
	// each row's evaluation (the paper's ε_GP). It simulates a noisy measurement and is
	// not a privacy mechanism; 0 records f(x_i) exactly.
	NoiseSD float64
	// Output says how query answers are released. The zero value releases exact
	// answers ("none"), which the daemon (package server) never defaults to.
	Output OutputPrivacy
	// ExactAnswers restricts exact answers (Output.Mechanism "none"); the zero value
	// restricts nothing (simulations). Ignored for private outputs.
	ExactAnswers ExactAnswerLimits
	// AllowExactProgramAnswers permits exact answers with EvaluateProgram. New refuses
	// that combination otherwise: each answer would be an exact function of one
	// record's features, which the projection release is meant to protect.
	AllowExactProgramAnswers bool
	// Evaluation says how a row's objective is evaluated (default: the target column).
	Evaluation Evaluation
	// MaxQueryIndices bounds the indices in one query; 0 means DefaultMaxQueryIndices.
	MaxQueryIndices int
	// MaxProjectionDim bounds r; 0 means DefaultMaxProjectionDim.
	MaxProjectionDim int
	// ProjectionMechanism is projection.MechanismGaussian (the JL projection plus
	// Gaussian noise, (ε, δ)-DP against any adversary; the default when empty) or
	// projection.MechanismLifted (Kharkovskii et al. 2020, Algorithm 1, docs/MATHS.md
	// §2.1, whose claimed guarantee does not hold: see the projection package documentation).
	ProjectionMechanism string
	// Projection is the mechanism ProjectionMechanism names, for a caller that has
	// parsed the name already (the server does, validating its configuration): New
	// takes it as it is, and ProjectionMechanism, if given, must be its name. Nil: New
	// parses ProjectionMechanism.
	Projection projection.Mechanism
	// Logger receives operator logs. It never receives a data row, M or a seed.
	Logger *zap.Logger
	// AllowWideProjection releases projections of more dimensions than features under
	// the Gaussian mechanism too, for simulations measuring them (pkg/simulate). The
	// daemon never sets it: such a release keeps no more information than r = d and adds
	// noise (validate). The lifted mechanism always allows them.
	AllowWideProjection bool
	// StudyEpsilon and StudyDelta are the projection's (ε, δ) of the default study: what
	// the curator quotes to a modeler that names none (Curator.Quote, DefaultStudy).
	// Zero takes DefaultStudyEpsilon, and for δ a share of the δ budgets sized so that
	// they hold as many default studies as the ε budgets (DefaultStudy). Neither changes
	// a limit: every charge is checked against the ledger's.
	StudyEpsilon, StudyDelta float64
	// Memory, when set, is the memory budget of releases (package memory): a new
	// projection is computed only once the memory it needs (projection.MemoryNeed and
	// the store's buffers) is admitted beside the releases being made and streamed, and
	// refused at once with a *MemoryError when it exceeds the whole budget; a release is
	// streamed to its client only once its stream's memory is admitted. Waiting honours
	// the request's context. At least MinMemory; nil admits everything.
	Memory *memory.Budget
	// ReservationOwner names this curator process in the ledger's reservations
	// (ledger.Hold.Owner): a new release holds its cost there while it is computed, and
	// RecoverReservations, at the next start under the same name, frees what a crash
	// left held. Default: the host's name (a StatefulSet pod keeps its name; other
	// restarts leave the reservations to expire).
	ReservationOwner string
	// ReservationTTL is how long a reservation holds its budget without being extended;
	// the curator extends it every third of that while the release is computed. 0 means
	// ledger.DefaultReservationTTL.
	ReservationTTL time.Duration
	// Stored bounds what the releases store for replay (a projection's matrix), per
	// identity and for the dataset: a new release that would store more is refused
	// when it is reserved (a *ledger.StoredBytesError). A zero field takes
	// DefaultStoredQuota's.
	Stored ledger.StoredQuota
	// SimulationProjectionSource, when set, replaces the crypto-seeded generator of M.
	// For simulations and tests only: a known seed reveals M, which the lifted
	// mechanism relies on keeping secret.
	SimulationProjectionSource func() projection.Source
}

// Curator makes the dataset's private releases. It is safe for concurrent use.
type Curator struct {
	cfg      Config
	log      *zap.Logger
	ds       *dataset.Dataset
	ledger   Ledger
	releases blob.Store
	out      *outputReleaser
	// program evaluates rows with EvaluateProgram.
	program *evaluator.Program

	locks keyedMutex

	mu      sync.RWMutex
	evals   map[int]float64              // recorded evaluation per row
	answers map[answerKey]releasedAnswer // released answer per (identity, row)
	noise   func() float64               // standard normal draws for observation noise
	noiseMu sync.Mutex

	// Last balance read per identity and relation, returned by a Query that released
	// nothing new (every answer cached) instead of a ledger read per query.
	balMu    sync.Mutex
	balances map[balanceKey]ledger.Balance

	// paid holds the identities known to have paid the answers' one charge
	// (chargeAnswers); exact holds what limits exact answers per identity.
	paidMu    sync.Mutex
	paid      map[paidKey]bool
	exactMu   sync.Mutex
	exact     map[string]*exactState
	exactRows exactRows

	// study is the default study, sized at its first use (DefaultStudy).
	studyMu sync.Mutex
	study   *StudySize

	// guarantee is GuaranteeStatement's text, stated at its first call.
	guaranteeOnce sync.Once
	guarantee     string

	// computeHook, when set (tests), is called as a new release's computation starts,
	// once its memory is admitted.
	computeHook func()
	// inputs is what every projection's guarantee depends on besides its request
	// (guaranteeInputs), part of its release id.
	inputs string
	// proj is the projection mechanism cfg.ProjectionMechanism names, parsed once.
	proj projection.Mechanism
}

type balanceKey struct {
	identity string
	rel      ledger.Relation
}

type answerKey struct {
	identity string
	index    int
	pass     int // QueryOptions.Pass
}

// CheckSettings validates the settings of a Config that New checks beyond the dataset
// and ledger — the observation noise and the evaluation mode and program — without
// creating anything (for a configuration check before serving).
func CheckSettings(noiseSD float64, e Evaluation) error {
	if err := checkNoiseSD(noiseSD); err != nil {
		return err
	}
	_, err := newProgram(e)
	return err
}

func checkNoiseSD(sd float64) error {
	if math.IsNaN(sd) || math.IsInf(sd, 0) || sd < 0 {
		return fmt.Errorf("curator: noise sd must be finite and ≥ 0, got %g", sd)
	}
	return nil
}

// The defaults of Config's limits, written once: New applies them to zero fields and
// the daemon's flags (server.NewConfig) take them as their defaults.
const (
	// DefaultMaxQueryIndices is the most indices in one query.
	DefaultMaxQueryIndices = 10000
	// DefaultMaxProjectionDim is the largest projection dimension r.
	DefaultMaxProjectionDim = 1024
	// DefaultEvaluationTimeout is the time limit of one program evaluation
	// (Evaluation.Timeout).
	DefaultEvaluationTimeout = time.Minute
)

// New validates cfg and returns a Curator.
func New(cfg Config) (*Curator, error) {
	if cfg.Dataset == nil || cfg.Ledger == nil {
		return nil, errors.New("curator: Dataset and Ledger are required")
	}
	if cfg.Releases == nil && cfg.StateDir == "" {
		return nil, errors.New("curator: StateDir (or Releases) is required")
	}
	if err := checkNoiseSD(cfg.NoiseSD); err != nil {
		return nil, err
	}
	if cfg.MaxQueryIndices <= 0 {
		cfg.MaxQueryIndices = DefaultMaxQueryIndices
	}
	if cfg.MaxProjectionDim <= 0 {
		cfg.MaxProjectionDim = DefaultMaxProjectionDim
	}
	if c := cfg.Memory.Capacity(); cfg.Memory != nil && c < MinMemory {
		return nil, fmt.Errorf("curator: a memory budget of %s cannot stream releases; give at least %s", memory.MiB(c), memory.MiB(MinMemory))
	}
	proj := cfg.Projection
	switch {
	case proj == nil:
		cfg.ProjectionMechanism = cmp.Or(cfg.ProjectionMechanism, projection.MechanismGaussian)
		var err error
		if proj, err = projection.ParseMechanism(cfg.ProjectionMechanism); err != nil {
			return nil, fmt.Errorf("curator: %w", err)
		}
	case cfg.ProjectionMechanism != "" && cfg.ProjectionMechanism != proj.Name():
		return nil, fmt.Errorf("curator: Config.ProjectionMechanism %q and Config.Projection %q name different mechanisms", cfg.ProjectionMechanism, proj.Name())
	default:
		cfg.ProjectionMechanism = proj.Name()
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.DatasetID == "" {
		cfg.DatasetID = cfg.Dataset.Name
	}
	if cfg.ReservationOwner == "" {
		cfg.ReservationOwner = DefaultReservationOwner()
	}
	if cfg.ReservationTTL < 0 {
		return nil, fmt.Errorf("curator: the reservation time to live must not be negative, got %v", cfg.ReservationTTL)
	}
	if cfg.ReservationTTL == 0 {
		cfg.ReservationTTL = ledger.DefaultReservationTTL
	}
	def := DefaultStoredQuota(cfg.Dataset.N, widest(cfg, proj))
	cfg.Stored.PerIdentity, cfg.Stored.Dataset = cmp.Or(cfg.Stored.PerIdentity, def.PerIdentity), cmp.Or(cfg.Stored.Dataset, def.Dataset)
	if cfg.Stored.PerIdentity < 0 || cfg.Stored.Dataset < 0 {
		return nil, fmt.Errorf("curator: the stored-bytes quotas must not be negative, got %d and %d", cfg.Stored.PerIdentity, cfg.Stored.Dataset)
	}
	if err := checkExact(cfg); err != nil {
		return nil, err
	}
	out, err := newOutputReleaser(cfg.Output)
	if err != nil {
		return nil, err
	}
	prog, err := newProgram(cfg.Evaluation)
	if err != nil {
		return nil, err
	}
	releases := cfg.Releases
	if releases == nil {
		dir, err := blob.OpenDir(ReleasesDir(cfg.StateDir))
		if err != nil {
			return nil, fmt.Errorf("curator: state directory: %w", err)
		}
		releases = dir
	}
	c := &Curator{
		cfg:      cfg,
		log:      cfg.Logger,
		ds:       cfg.Dataset,
		ledger:   cfg.Ledger,
		releases: releases,
		out:      out,
		program:  prog,
		evals:    make(map[int]float64),
		answers:  make(map[answerKey]releasedAnswer),
		noise:    newNoiseSource(),

		balances: make(map[balanceKey]ledger.Balance),
		paid:     make(map[paidKey]bool),
		exact:    make(map[string]*exactState),
		inputs:   guaranteeInputs(proj.Name(), cfg.Dataset),
		proj:     proj,
	}
	return c, nil
}

// Info describes the dataset, the protection of each release and the caller's budget
// (its feature-unit balance, the relation the projection is stated for). It releases
// nothing.
type Info struct {
	// Name is the display name; DatasetID the identity budgets are kept under.
	Name, DatasetID string
	Rows, Dim       int
	Budget          ledger.Balance
	Output          OutputPrivacy
	ProtectedUnit   string
	MaxQueryIndices int
	// ProjectionMechanism and ProjectionRelation: how projections are made private and
	// the neighbour relation their (ε, δ) is stated for (RelationFeatureUnit).
	ProjectionMechanism string
	ProjectionRelation  ledger.Relation
	// OutputRelation is the relation of the answers' guarantee (RelationRecord);
	// OutputGuarantee states that guarantee, or that there is none.
	OutputRelation  ledger.Relation
	OutputGuarantee string
	// OutputNoiseSD is the standard deviation of each answer's noise at the public
	// range (0 for exact answers) and OutputNoise its family.
	OutputNoiseSD float64
	OutputNoise   noise.Family
	// ExactAnswersMaxRows is the most distinct rows of the dataset answered exactly, to
	// all identities together
	// (0: no limit, or outputs are private).
	ExactAnswersMaxRows int
	// Guarantee is the whole statement, projection and answers, in plain words.
	Guarantee string
}

// Info returns the dataset's description for identity.
func (c *Curator) Info(ctx context.Context, identity string) (Info, error) {
	bal, err := c.Balance(ctx, identity, ledger.RelationFeatureUnit)
	if err != nil {
		return Info{}, err
	}
	info := Info{
		Name:                c.ds.Name,
		DatasetID:           c.cfg.DatasetID,
		Rows:                c.ds.N,
		Dim:                 c.ds.D,
		Budget:              bal,
		Output:              c.cfg.Output.normalised(),
		ProtectedUnit:       c.ds.Unit,
		MaxQueryIndices:     c.cfg.MaxQueryIndices,
		ProjectionMechanism: c.cfg.ProjectionMechanism,
		ProjectionRelation:  ProjectionRelation,
		OutputRelation:      AnswerRelation,
		OutputGuarantee:     c.OutputGuarantee(),
		OutputNoiseSD:       c.out.noiseSD(),
		OutputNoise:         c.out.noise(),
		Guarantee:           c.GuaranteeStatement(),
	}
	if c.out.exact() {
		info.ExactAnswersMaxRows = c.cfg.ExactAnswers.MaxRows
	}
	return info, nil
}

// Balance returns identity's budget on this dataset under the neighbour relation rel.
func (c *Curator) Balance(ctx context.Context, identity string, rel ledger.Relation) (ledger.Balance, error) {
	bal, err := c.ledger.Balance(ctx, c.account(identity), rel)
	if err != nil {
		return ledger.Balance{}, fmt.Errorf("curator: %w", err)
	}
	c.balMu.Lock()
	c.balances[balanceKey{identity, rel}] = bal
	c.balMu.Unlock()
	return bal, nil
}

// lastBalance returns the balance most recently read for identity by this process.
// It can lag charges made since by other processes sharing the ledger (or by other
// code in this process); it is only an indication for the caller — every charge is
// still checked atomically by the ledger.
func (c *Curator) lastBalance(identity string, rel ledger.Relation) (ledger.Balance, bool) {
	c.balMu.Lock()
	defer c.balMu.Unlock()
	b, ok := c.balances[balanceKey{identity, rel}]
	return b, ok
}

func (c *Curator) account(identity string) ledger.Account {
	return ledger.Account{Dataset: c.cfg.DatasetID, Identity: identity}
}

// releasePart is one charge of a release: its relation, cost and whole-patient cost.
type releasePart struct {
	rel     ledger.Relation
	cost    ledger.Cost
	patient ledger.PatientCost
}

// chargePart is the releasePart of a charge (its whole-patient cost the one it states,
// or the ledger's default for its relation).
func chargePart(ch ledger.Charge) releasePart {
	p := ledger.DefaultPatientCost(ch.Relation, ch.Cost)
	if ch.Patient != nil {
		p = *ch.Patient
	}
	return releasePart{rel: ch.Relation, cost: ch.Cost, patient: p}
}

// ensureAffordable refuses, before any data is touched, releases (one, or several paid
// together: a projection with its answers) whose costs exceed what remains in any
// relation they count towards (rel.CountsTowards: a record-level release also spends
// feature-unit budget), the costs of the parts counting towards a relation summed, or
// whose summed whole-patient costs exceed what the whole-patient caps leave. The
// atomic charge after the computation is what enforces the budget; this check only
// avoids computing releases that would be refused.
func (c *Curator) ensureAffordable(ctx context.Context, identity string, parts ...releasePart) error {
	for _, s := range c.sums(parts) {
		if s.cost.IsZero() {
			continue
		}
		bal, err := c.Balance(ctx, identity, s.rel)
		if err != nil {
			return err
		}
		if err := refusal(bal, s.cost); err != nil {
			return err
		}
	}
	_, err := c.patientCheck(ctx, identity, parts)
	return err
}

// patientCheck returns the whole-patient balance of identity and the refusal of parts
// by the whole-patient caps in force (nil if they fit, or there is no cap).
func (c *Curator) patientCheck(ctx context.Context, identity string, parts []releasePart) (ledger.PatientBalance, error) {
	pb, err := c.ledger.PatientBalance(ctx, c.account(identity))
	if err != nil {
		return pb, fmt.Errorf("curator: %w", err)
	}
	return pb, patientRefusal(pb, patientSum(parts))
}

// patientSum is the summed whole-patient cost of parts (basic composition).
func patientSum(parts []releasePart) ledger.PatientCost {
	var sum ledger.PatientCost
	for _, p := range parts {
		if p.patient.Unbounded {
			return ledger.Unbounded
		}
		sum.Epsilon += p.patient.Epsilon
		sum.Delta += p.patient.Delta
	}
	return sum
}

// patientRefusal is the *ledger.BudgetError of a charge of whole-patient cost p that
// the caps of pb cannot pay, nil if they can (ledger.FitsRemaining) or there are none.
func patientRefusal(pb ledger.PatientBalance, p ledger.PatientCost) error {
	for _, s := range []struct {
		scope string
		cap   ledger.Cost
		have  ledger.PatientTotal
		left  ledger.Cost
	}{{ledger.ScopeIdentity, pb.Limits.PerIdentity, pb.IdentityTotal, pb.Remaining}, {ledger.ScopeDataset, pb.Limits.Dataset, pb.DatasetTotal, pb.DatasetRemaining}} {
		if s.cap.Epsilon == 0 || !p.Unbounded && p.Epsilon == 0 && p.Delta == 0 {
			continue
		}
		if p.Unbounded || !s.have.Bounded() || !ledger.FitsRemaining(p.Cost(), s.left, s.cap) {
			return &ledger.BudgetError{Scope: s.scope, Account: pb.Account, Relation: ledger.RelationRecord, WholePatient: true,
				Unbounded: p.Unbounded, Requested: p.Cost(), Remaining: s.left, Limit: s.cap}
		}
	}
	return nil
}

// sums returns, for every relation the parts count towards (in the order the parts
// name them), the sum of the costs of the parts that count towards it.
func (c *Curator) sums(parts []releasePart) []releasePart {
	var out []releasePart
	for _, p := range parts {
		for _, r := range p.rel.CountsTowards() {
			if !slices.ContainsFunc(out, func(q releasePart) bool { return q.rel == r }) {
				out = append(out, releasePart{rel: r})
			}
		}
	}
	for i := range out {
		for _, p := range parts {
			if p.rel.Implies(out[i].rel) {
				out[i].cost.Epsilon += p.cost.Epsilon
				out[i].cost.Delta += p.cost.Delta
			}
		}
	}
	return out
}

// refusal is the *ledger.BudgetError of a charge of cost under bal's relation that
// bal cannot pay, nil if it can (ledger.FitsRemaining), naming the scope that binds so
// that the remainder in the message is what can still be spent.
func refusal(bal ledger.Balance, cost ledger.Cost) error {
	idOK := ledger.FitsRemaining(cost, bal.Remaining, bal.Limits.PerIdentity)
	dsOK := ledger.FitsRemaining(cost, bal.DatasetRemaining, bal.Limits.Dataset)
	switch {
	case idOK && dsOK:
		return nil
	case !dsOK && (idOK || bal.DatasetRemaining.Epsilon < bal.Remaining.Epsilon):
		return &ledger.BudgetError{Scope: ledger.ScopeDataset, Account: bal.Account, Relation: bal.Relation, Requested: cost, Remaining: bal.DatasetRemaining, Limit: bal.Limits.Dataset}
	default:
		return &ledger.BudgetError{Scope: ledger.ScopeIdentity, Account: bal.Account, Relation: bal.Relation, Requested: cost, Remaining: bal.Remaining, Limit: bal.Limits.PerIdentity}
	}
}

// keyedMutex serialises work per key (one computation per release at a time).
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	refs int
}

func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = make(map[string]*keyLock)
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
