package jobs

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/jobs/jobspec"
	"github.com/privbo/privbo/pkg/ledger"
)

// Config configures a Manager.
type Config struct {
	// Store keeps the jobs; nil opens StateDir/jobs.db (OpenSQLite). The Manager owns
	// it: Close closes it.
	Store *Store
	// StateDir holds jobs.db when Store is nil.
	StateDir string
	// Dataset names the ledger account's dataset.
	Dataset string
	Ledger  Ledger
	Runner  Runner
	Logger  *zap.Logger
	// MaxRunning bounds concurrently running jobs; 0 means 1. Others wait queued.
	MaxRunning int
	// Lease is how long a replica's claim on a job of a shared store lasts unless
	// renewed; it renews every Lease/3 and looks for jobs to take over as often. 0
	// means DefaultLease. Unused with a store of one curator.
	Lease time.Duration
	// Reservation is how a submission holds the job's cost in the ledger between the
	// budget check and the charge (ledger.Ledger.Reserve): the curator's owner name, so
	// that its restart frees what a crash left held, and the time to live.
	Reservation ledger.Hold

	// every, when set (tests), is how often the manager renews and looks instead of
	// Lease/3, so that a test can keep a live replica's lease out of reach of a loaded
	// machine's scheduling while it still renews; it is also how often Watch and Cancel
	// look at the store (poll), so that a test can show they wake on events instead.
	every time.Duration
}

// Ledger is what a Manager uses of the privacy ledger, a *ledger.Ledger (whose
// methods say what each does): a job's cost is reserved, then committed, or
// cancelled; its result is attached to its record; Adopt reads records.
type Ledger interface {
	Reserve(ctx context.Context, cs []ledger.Charge, h ledger.Hold) (*ledger.Reservation, error)
	Commit(ctx context.Context, r *ledger.Reservation, cs []ledger.Charge) ([]ledger.Receipt, error)
	Cancel(ctx context.Context, r *ledger.Reservation) error
	SetResult(ctx context.Context, a ledger.Account, key string, result []byte) error
	Get(ctx context.Context, a ledger.Account, key string) (ledger.Receipt, bool, error)
}

// DefaultLease is the lease of Config.Lease 0. A replica renews its jobs' leases every
// 5 s, so one that is alive keeps them through two failed renewals (a database outage
// of up to about 10 s, a long pause); the leases of one that dies end 15 s after its
// last renewal, 10–15 s after its death, and a live replica, looking every 5 s, takes
// its jobs over 10–20 s after the death. A job's lease costs one UPDATE per 5 s.
const DefaultLease = 15 * time.Second

// MaxTakeovers is how many times a job is taken over from a replica that died (its
// lease expired) before it is marked failed instead: a job whose run kills its replica
// (memory, a crashing evaluator) stops after taking down MaxTakeovers+1 replicas
// rather than every replica in turn. Handovers at shutdown do not count.
const MaxTakeovers = 2

// Manager accepts, runs and reports jobs. It is safe for concurrent use.
//
// With a shared store (OpenPostgres) the managers of every replica run the dataset's
// jobs together: a job is run by the manager holding its lease (the runner and
// lease_ns columns of its row), which it takes when it accepts the job and renews
// every Lease/3 while the job runs. Every manager looks as often for unfinished jobs
// whose lease has expired — their replica died, or handed them over when it shut
// down — and claims them with a compare-and-set on the lease it saw, so that exactly
// one takes each. A job taken over starts again from the beginning: its charge was
// paid once, when it was accepted (ledger key job/ID), and is not paid again; what
// the replica that died computed was never released (progress events carry only
// counts). Only the lease holder writes a job's events and state, and a finished job
// never changes, so a result is written once: a replica that lost its lease (a pause
// longer than the lease) discards what it computed.
type Manager struct {
	cfg    Config
	log    *zap.Logger
	store  *Store
	slots  chan struct{}
	runner string // this manager's name in the leases of a shared store ("" otherwise)
	lease  time.Duration
	every  time.Duration // how often leases are renewed and expired ones looked for

	submitMu sync.Mutex // serialises the charge-and-record step of Submit

	mu       sync.Mutex
	closed   bool
	crashed  bool                  // crash: write nothing more (tests)
	running  map[string]runningJob // started jobs whose goroutine has not returned
	watchers map[string]map[chan Event]struct{}
	wg       sync.WaitGroup
	stop     context.CancelFunc
	base     context.Context
	leaseWG  sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// runningJob is a started job's handle: cancel stops it (with a cause), done is closed
// once its goroutine has recorded its final state and returned.
type runningJob struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// Causes of a running job's cancellation.
var (
	errCancelRequested = errors.New("jobs: cancellation requested")
	errShutdown        = errors.New("jobs: the curator is shutting down")
	errCrashed         = errors.New("jobs: the manager crashed")
)

// NewManager opens the job store. With a store of one curator, it marks jobs left
// unfinished by an earlier process as failed: their charge stays spent. With a shared
// store, it starts taking over jobs whose replica stopped (see Manager).
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Ledger == nil || cfg.Runner == nil || cfg.Dataset == "" || (cfg.StateDir == "" && cfg.Store == nil) {
		return nil, errors.New("jobs: Store or StateDir, Dataset, Ledger and Runner are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = 1
	}
	if cfg.Lease < 0 {
		return nil, fmt.Errorf("jobs: Lease must not be negative, got %v", cfg.Lease)
	}
	if cfg.Lease == 0 {
		cfg.Lease = DefaultLease
	}
	st := cfg.Store
	if st == nil {
		var err error
		if st, err = OpenSQLite(filepath.Join(cfg.StateDir, "jobs.db")); err != nil {
			return nil, err
		}
	}
	base, stop := context.WithCancel(context.Background())
	every := cfg.every
	if every == 0 {
		every = cfg.Lease / 3
	}
	m := &Manager{cfg: cfg, log: cfg.Logger, store: st, slots: make(chan struct{}, cfg.MaxRunning), lease: cfg.Lease, every: every,
		running: map[string]runningJob{}, watchers: map[string]map[chan Event]struct{}{}, base: base, stop: stop}
	if st.shared {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			st.Close()
			return nil, fmt.Errorf("jobs: %w", err)
		}
		host, _ := os.Hostname()
		m.runner = host + "/" + hex.EncodeToString(b[:])
		m.leaseWG.Add(1)
		go m.leaseLoop()
		return m, nil
	}
	ids, err := st.unfinished(context.Background())
	if err != nil {
		st.Close()
		return nil, err
	}
	for _, id := range ids {
		if _, err := m.record(context.Background(), Event{JobID: id, State: Failed, Message: "interrupted: the curator stopped while the job was unfinished; its privacy charge stays spent"}, nil, "interrupted by a curator restart"); err != nil {
			st.Close()
			return nil, err
		}
		m.log.Warn("job interrupted by restart marked failed", zap.String("job", id))
	}
	return m, nil
}

// jobID derives a job's id from its owner and idempotency key.
func jobID(identity, key string) string {
	h := sha256.Sum256([]byte("job\x00" + identity + "\x00" + key))
	return "job-" + hex.EncodeToString(h[:10])
}

// jobID is a job's id in m's store. A shared store may hold the jobs of several
// datasets, so its ids depend on the dataset too; a jobs.db keeps the ids it always had,
// so that retries of jobs it accepted before still find them.
func (m *Manager) jobID(identity, key string) string {
	if m.store.shared {
		return jobID(m.cfg.Dataset+"\x00"+identity, key)
	}
	return jobID(identity, key)
}

// existing returns identity's job of key: in a shared store, also one adopted from a
// jobs.db (Adopt) under the id the file gave it.
func (m *Manager) existing(ctx context.Context, identity, key string) (Job, error) {
	j, err := m.store.get(ctx, m.jobID(identity, key))
	if errors.Is(err, ErrNotFound) && m.store.shared {
		if j, err = m.store.get(ctx, jobID(identity, key)); err == nil && j.Identity != identity {
			err = ErrNotFound
		}
	}
	return j, err
}

// jobRelation is the default neighbour relation of a job's kind (Spec.Relation).
func jobRelation(spec Spec) ledger.Relation { return spec.Relation() }

// chargeRelation is the relation a job is charged under: the one its plan states
// with its guarantee (the runner knows, for instance, what an external evaluator's
// operator declared), or the default for its kind.
func chargeRelation(spec Spec, plan Plan) ledger.Relation {
	if plan.Relation != "" {
		return plan.Relation
	}
	return jobRelation(spec)
}

// Submit plans the job, charges its cost and starts it. With a key seen before it
// returns the existing job (same spec) or ErrKeyReused (another spec). A key whose
// charge the ledger already holds but which this manager has no job for (accepted by
// another replica sharing the ledger, with a store of its own) is refused with
// ErrAcceptedElsewhere and never run: one charge buys one release. With a shared store
// there is no elsewhere: every replica finds the job, and a charge found without a job
// (its replica stopped between the two) gets its job recorded here, once.
func (m *Manager) Submit(ctx context.Context, identity, key string, spec Spec) (Job, error) {
	if len(key) > 128 {
		return Job{}, fmt.Errorf("jobs: %w: idempotency key longer than 128 bytes", ErrInvalidSpec)
	}
	if spec.Kind() == "" {
		return Job{}, fmt.Errorf("jobs: %w: exactly one job kind must be set", ErrInvalidSpec)
	}
	if key != "" { // a retry: answer it before planning, which can take seconds
		if existing, err := m.existing(ctx, identity, key); err == nil {
			return m.sameSpec(existing, spec)
		} else if !errors.Is(err, ErrNotFound) {
			return Job{}, err
		}
	}
	plan, err := m.cfg.Runner.Plan(spec)
	if err != nil {
		return Job{}, err
	}
	if Refused(spec, plan) {
		return Job{}, &UninformativeError{Forecast: *plan.Forecast}
	}
	if key == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return Job{}, fmt.Errorf("jobs: %w", err)
		}
		key = hex.EncodeToString(b[:])
	}
	id := m.jobID(identity, key)
	// Charge and record under one lock, so that a concurrent identical submission to
	// this manager finds the job record below rather than a replayed charge without one.
	m.submitMu.Lock()
	defer m.submitMu.Unlock()
	if existing, err := m.existing(ctx, identity, key); err == nil {
		return m.sameSpec(existing, spec)
	} else if !errors.Is(err, ErrNotFound) {
		return Job{}, err
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return Job{}, ErrClosed
	}
	// Reserve, record, commit: the cost is held in the ledger before the job exists, and
	// charged once its record is durable, before it starts, so a job that cannot be paid
	// for never touches the data and a failed submission leaves neither a charge without
	// a job nor a job that runs uncharged.
	specJSON, _ := json.Marshal(spec)
	charge := ledger.Charge{
		Account: ledger.Account{Dataset: m.cfg.Dataset, Identity: identity}, Key: "job/" + id, Kind: ledger.KindJobPrefix + spec.Kind(),
		Relation: chargeRelation(spec, plan), Cost: plan.Cost, Patient: plan.Patient, Description: truncate(string(specJSON), 4000),
	}
	res, err := m.cfg.Ledger.Reserve(ctx, []ledger.Charge{charge}, m.cfg.Reservation)
	if errors.Is(err, ledger.ErrKeyConflict) {
		// The key was charged before for a spec of another cost.
		return Job{}, fmt.Errorf("jobs: %w (job %s)", ErrKeyReused, id)
	} else if err != nil {
		return Job{}, fmt.Errorf("jobs: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			if err := m.cfg.Ledger.Cancel(context.WithoutCancel(ctx), res); err != nil {
				m.log.Warn("cancelling a job's reservation failed; it is retried while the ledger answers, and holds its budget until then or until it expires", zap.String("job", id), zap.Error(err))
			}
		}
	}()
	rec := res.Receipts[0]
	if rec.Replayed && !m.store.shared {
		// The ledger already holds this job's charge but this manager's jobs.db has no
		// record of it: another replica sharing the ledger accepted it, or this
		// replica's jobs.db was lost. The job may have run (or be running) elsewhere, so
		// running it here would release a second, independent result for one charge
		// (docs/MATHS.md §7). Refuse; nothing is spent.
		m.log.Warn("job charge replayed without a local job record; not running it",
			zap.String("job", id), zap.String("identity", identity), zap.Bool("has_result", len(rec.Result) > 0))
		return Job{}, &acceptedElsewhereError{id: id}
	}
	// With a shared store a replayed charge has no job anywhere yet (the store was read
	// above): another replica is between its charge and its record, or stopped there.
	// The insert below decides which record stands; the job runs once, under its lease.
	now := time.Now().UTC()
	j, created, err := m.store.insert(ctx, Job{ID: id, Identity: identity, Key: key, Spec: spec, State: Queued,
		Cost: plan.Cost, Guarantee: plan.Guarantee, Created: now, Updated: now}, m.runner, m.lease)
	if err != nil {
		return Job{}, err
	}
	if !created {
		return m.sameSpec(j, spec)
	}
	var recs []ledger.Receipt
	if rec.Replayed {
		// Shared store: the charge was made by a replica that stopped before recording
		// its job; this record stands, and the job runs once, charged once.
		recs = res.Receipts
	} else {
		recs, err = m.cfg.Ledger.Commit(ctx, res, []ledger.Charge{charge})
	}
	if err == nil && !rec.Replayed && recs[0].Replayed {
		err = &acceptedElsewhereError{id: id} // the reservation lapsed and another replica charged it
	}
	if err != nil {
		// Recorded but neither charged nor started: it never runs.
		if _, rerr := m.record(context.WithoutCancel(ctx), Event{JobID: id, State: Failed, Message: "not started: its privacy charge could not be made; nothing was spent"},
			nil, "charge failed"); rerr != nil {
			m.log.Error("recording a job whose charge failed", zap.String("job", id), zap.Error(rerr))
		}
		var ae *acceptedElsewhereError
		if errors.As(err, &ae) {
			return Job{}, err
		}
		return Job{}, fmt.Errorf("jobs: %w", err)
	}
	committed = true
	m.log.Info("job accepted", zap.String("job", id), zap.String("identity", identity), zap.String("kind", spec.Kind()),
		zap.Float64("epsilon", plan.Cost.Epsilon), zap.Float64("delta", plan.Cost.Delta))
	m.start(j)
	return j, nil
}

// Quote plans spec as Submit would — cost, relation, guarantee and, for a Kusner job, its
// forecast — without charging, recording or running anything. Whether Submit would
// refuse it for its forecast is Refused(spec, plan).
func (m *Manager) Quote(spec Spec) (Plan, error) {
	if spec.Kind() == "" {
		return Plan{}, fmt.Errorf("jobs: %w: exactly one job kind must be set", ErrInvalidSpec)
	}
	plan, err := m.cfg.Runner.Plan(spec)
	if err != nil {
		return Plan{}, err
	}
	plan.Relation = chargeRelation(spec, plan)
	return plan, nil
}

// Refused reports whether Submit refuses spec, planned as plan, for its forecast.
func Refused(spec Spec, plan Plan) bool {
	k := jobspec.KindOf(spec)
	return plan.Forecast != nil && !plan.Forecast.Informative && !(k != nil && k.Forced(spec))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func (m *Manager) sameSpec(j Job, spec Spec) (Job, error) {
	a, _ := json.Marshal(j.Spec)
	b, _ := json.Marshal(spec)
	if string(a) != string(b) {
		return Job{}, fmt.Errorf("jobs: %w (job %s)", ErrKeyReused, j.ID)
	}
	return j, nil
}

// start runs j, whose lease this manager holds (or which is in its own store).
func (m *Manager) start(j Job) {
	m.mu.Lock()
	if m.closed { // left queued: marked interrupted at the next start, or taken over
		m.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancelCause(m.base)
	done := make(chan struct{})
	m.running[j.ID] = runningJob{cancel: cancel, done: done}
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		defer func() {
			m.mu.Lock()
			delete(m.running, j.ID)
			m.mu.Unlock()
			cancel(nil)
			close(done) // after run's finish recorded the final state: Cancel may read it
		}()
		m.run(ctx, j)
	}()
}

func (m *Manager) run(ctx context.Context, j Job) {
	select {
	case m.slots <- struct{}{}:
		defer func() { <-m.slots }()
	case <-ctx.Done():
		m.finish(ctx, j, nil, ctx.Err())
		return
	}
	if _, err := m.record(context.Background(), Event{JobID: j.ID, State: Running, Message: "running"}, nil, ""); err != nil {
		if !errors.Is(err, errLeaseLost) && !errors.Is(err, errCrashed) {
			m.log.Error("recording job state", zap.String("job", j.ID), zap.Error(err))
		}
		m.finish(ctx, j, nil, err)
		return
	}
	start := time.Now()
	res, err := m.cfg.Runner.Run(ctx, j.Spec, func(p Progress) {
		if _, err := m.record(context.Background(), Event{JobID: j.ID, State: Running, Step: p.Step, Total: p.Total, Message: p.Message}, nil, ""); err != nil &&
			!errors.Is(err, errLeaseLost) && !errors.Is(err, errCrashed) {
			m.log.Error("recording job progress", zap.String("job", j.ID), zap.Error(err))
		}
	})
	m.log.Info("job finished", zap.String("job", j.ID), zap.Duration("duration", time.Since(start)), zap.Bool("ok", err == nil))
	if err != nil {
		m.finish(ctx, j, nil, err)
		return
	}
	m.finish(ctx, j, &res, nil)
}

// finish records the job's end (ctx is the job's: its cause says why it stopped). A
// result is also attached to the job's ledger receipt, once the job store took it.
func (m *Manager) finish(jctx context.Context, j Job, res *Result, err error) {
	ctx := context.Background()
	cause := context.Cause(jctx)
	switch {
	case errors.Is(err, errCrashed) || errors.Is(cause, errCrashed):
		// As if the process had died: nothing more is written.
	case errors.Is(err, errLeaseLost) || errors.Is(cause, errLeaseLost):
		m.log.Warn("job taken over by another replica (this one lost its lease); what it computed here is discarded",
			zap.String("job", j.ID))
	case err == nil:
		// Renewing the lease first leaves this manager a whole lease to attach the
		// result to the ledger receipt and record it, before any other could take the
		// job over; a manager that lost the lease releases nothing.
		if _, err := m.store.renew(ctx, j.ID, m.runner, m.lease); errors.Is(err, errLeaseLost) {
			m.log.Warn("job result discarded: another replica took the job over", zap.String("job", j.ID))
			return
		}
		b, _ := json.Marshal(res)
		if err := m.cfg.Ledger.SetResult(ctx, ledger.Account{Dataset: m.cfg.Dataset, Identity: j.Identity}, "job/"+j.ID, b); err != nil {
			m.log.Error("attaching job result to its ledger receipt", zap.String("job", j.ID), zap.Error(err))
		}
		_, err = m.record(ctx, Event{JobID: j.ID, State: Succeeded, Message: "finished; result released"}, res, "")
		if errors.Is(err, errLeaseLost) {
			m.log.Warn("job result discarded: another replica took the job over", zap.String("job", j.ID))
		} else if err != nil {
			m.log.Error("recording job result", zap.String("job", j.ID), zap.Error(err))
		}
	case errors.Is(err, context.Canceled) && errors.Is(cause, errShutdown) && m.store.shared:
		// Hand the job over: another replica takes it over at its next look.
		m.recordWith(ctx, Event{JobID: j.ID, State: Queued, Message: "handed over: the replica running it shut down; another replica runs it again from the start; the privacy charge is not paid again"},
			nil, "", write{runner: m.runner, handover: true})
	case errors.Is(err, context.Canceled) && errors.Is(cause, errShutdown):
		m.record(ctx, Event{JobID: j.ID, State: Failed, Message: "interrupted: the curator shut down; the privacy charge stays spent"}, nil, "interrupted by curator shutdown")
	case errors.Is(err, context.Canceled):
		m.record(ctx, Event{JobID: j.ID, State: Cancelled, Message: "cancelled; the privacy charge stays spent"}, nil, "cancelled")
	default:
		msg := "internal error; the curator's operator can find details in its log under job " + j.ID
		var pe *PublicError
		if errors.As(err, &pe) {
			msg = pe.Msg
		}
		m.log.Error("job failed", zap.String("job", j.ID), zap.Error(err))
		m.record(ctx, Event{JobID: j.ID, State: Failed, Message: "failed: " + msg}, nil, msg)
	}
}

// record appends an event as the job's lease holder, durably, and wakes its watchers.
func (m *Manager) record(ctx context.Context, e Event, res *Result, errMsg string) (Event, error) {
	return m.recordWith(ctx, e, res, errMsg, write{runner: m.runner})
}

func (m *Manager) recordWith(ctx context.Context, e Event, res *Result, errMsg string, w write) (Event, error) {
	m.mu.Lock()
	crashed := m.crashed
	m.mu.Unlock()
	if crashed {
		return e, errCrashed
	}
	e.Time = time.Now().UTC()
	e, err := m.store.appendEvent(ctx, e, res, errMsg, w)
	if err != nil {
		return e, err
	}
	m.mu.Lock()
	for ch := range m.watchers[e.JobID] {
		select {
		case ch <- e:
		default: // a slow watcher re-reads from the store
		}
	}
	m.mu.Unlock()
	return e, nil
}

// Get returns identity's job id.
func (m *Manager) Get(ctx context.Context, identity, id string) (Job, error) {
	j, err := m.store.get(ctx, id)
	if err != nil {
		return Job{}, err
	}
	if j.Identity != identity {
		return Job{}, ErrNotFound
	}
	return j, nil
}

// Trace returns job id's operator-only trace (any identity's: the operator sees all),
// ErrNotFound if the job left none (not finished, or a kind that keeps none). Never
// serve it to a modeler: it holds what the job's guarantee does not cover.
func (m *Manager) Trace(ctx context.Context, id string) (*Trace, error) {
	return m.store.trace(ctx, id)
}

// Events returns job id's events after seq `after` (any identity's; for the operator).
func (m *Manager) Events(ctx context.Context, id string, after uint64) ([]Event, error) {
	return m.store.events(ctx, id, after)
}

// List returns identity's jobs, newest first.
func (m *Manager) List(ctx context.Context, identity string) ([]Job, error) {
	return m.store.list(ctx, identity)
}

// Cancel stops identity's job id if it is still queued or running, waits for it to
// stop and returns it in its final state (Cancelled, or whatever state it reached
// first). A job already finished is returned as it is, with no error.
//
// Cancel waits only on the job's end and on ctx; ctx bounds the wait. If ctx is
// already done, Cancel does nothing and returns ctx's error. If ctx ends while the
// job is still stopping (a runner slow to heed cancellation), Cancel returns an error
// wrapping ctx.Err(); the cancellation was requested and goes ahead, so a later Get
// or Watch shows the job cancelled.
//
// With a shared store the job may run on another replica: the cancellation is recorded
// in the job's row, the replica running it stops it when it next renews its lease
// (within Lease/3), and Cancel waits for the job's final state in the store.
func (m *Manager) Cancel(ctx context.Context, identity, id string) (Job, error) {
	if err := ctx.Err(); err != nil {
		return Job{}, fmt.Errorf("jobs: cancel job %s: %w", id, err)
	}
	j, err := m.Get(ctx, identity, id)
	if err != nil || j.State.Terminal() {
		return j, err
	}
	if m.store.shared {
		if err := m.store.requestCancel(ctx, id); err != nil {
			return Job{}, err
		}
	}
	m.mu.Lock()
	r, ok := m.running[id]
	m.mu.Unlock()
	if ok {
		r.cancel(errCancelRequested)
		select {
		case <-r.done:
		case <-ctx.Done():
			return Job{}, fmt.Errorf("jobs: job %s was asked to stop but had not stopped yet: %w", id, ctx.Err())
		}
		return m.Get(ctx, identity, id)
	}
	if !m.store.shared {
		return m.Get(ctx, identity, id)
	}
	tick := time.NewTicker(m.poll())
	defer tick.Stop()
	for {
		j, err := m.Get(ctx, identity, id)
		if err != nil || j.State.Terminal() {
			return j, err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return Job{}, fmt.Errorf("jobs: job %s was asked to stop but had not stopped yet: %w", id, ctx.Err())
		}
	}
}

// Watch sends identity's job's events after seq `after`, then live events, until the
// job ends or ctx is done. With a shared store it also returns ErrClosed when this
// manager stops (Interrupt): the watcher resumes on another replica after its last seq.
func (m *Manager) Watch(ctx context.Context, identity, id string, after uint64, send func(Event) error) error {
	if _, err := m.Get(ctx, identity, id); err != nil {
		return err
	}
	ch := make(chan Event, 64)
	m.mu.Lock()
	if m.watchers[id] == nil {
		m.watchers[id] = map[chan Event]struct{}{}
	}
	m.watchers[id][ch] = struct{}{}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.watchers[id], ch)
		if len(m.watchers[id]) == 0 {
			delete(m.watchers, id)
		}
		m.mu.Unlock()
	}()
	var stopping <-chan struct{} // nil: a curator of its own ends its jobs when it stops
	if m.store.shared {
		stopping = m.base.Done()
	}
	tick := time.NewTicker(m.poll())
	defer tick.Stop()
	for {
		// The store is the truth; the channel and the ticker only say when to look.
		evs, err := m.store.events(ctx, id, after)
		if err != nil {
			return err
		}
		if len(evs) == 0 { // nothing new: a finished job has nothing more to say
			j, err := m.store.get(ctx, id)
			if err != nil {
				return err
			}
			if j.State.Terminal() {
				// The job may have ended between the two reads: its last events
				// (state and event are written in one transaction) are there now.
				if evs, err = m.store.events(ctx, id, after); err != nil {
					return err
				}
				if len(evs) == 0 {
					return nil
				}
			}
		}
		for _, e := range evs {
			if err := send(e); err != nil {
				return err
			}
			after = e.Seq
			if e.State.Terminal() {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-stopping:
			// This replica stops; another one serves the rest (ErrClosed says retry).
			return ErrClosed
		case <-ch:
		case <-tick.C:
		}
	}
}

// CountByState returns how many jobs (of all identities) are in each state.
func (m *Manager) CountByState(ctx context.Context) (map[State]int, error) {
	return m.store.countByState(ctx)
}

// poll is how often Watch and Cancel look at the store for what another replica wrote
// (a replica's own writes wake them at once).
func (m *Manager) poll() time.Duration {
	if m.cfg.every != 0 { // a test's
		return m.cfg.every
	}
	if m.store.shared {
		return min(time.Second, m.every)
	}
	return time.Second
}

// Interrupt stops accepting jobs and interrupts running ones, waiting for them to
// stop. With a store of one curator they are marked failed, their charge spent; with
// a shared store they are handed over to another replica, which runs them again (their
// charge is not paid again). Reads (Get, List, Watch) keep working until Close, so a
// server can drain its RPCs in between.
func (m *Manager) Interrupt() {
	m.interrupt(errShutdown)
}

func (m *Manager) interrupt(cause error) {
	m.mu.Lock()
	m.closed = true
	if cause == errCrashed {
		m.crashed = true
	}
	for _, r := range m.running {
		r.cancel(cause)
	}
	m.mu.Unlock()
	m.stop()
	m.leaseWG.Wait()
	m.wg.Wait()
}

// crash stops the manager as if its process had died: its jobs stop without a word
// written, their leases left to expire (for tests of the takeover).
func (m *Manager) crash() { m.interrupt(errCrashed) }

// Close interrupts running jobs (see Interrupt) and closes the store.
func (m *Manager) Close() error {
	m.Interrupt()
	m.closeOnce.Do(func() { m.closeErr = m.store.Close() })
	return m.closeErr
}

// leaseLoop renews the leases of the jobs this manager runs and takes over jobs whose
// lease expired, every Lease/3, until the manager stops.
func (m *Manager) leaseLoop() {
	defer m.leaseWG.Done()
	t := time.NewTicker(m.every)
	defer t.Stop()
	for {
		m.takeOver()
		select {
		case <-m.base.Done():
			return
		case <-t.C:
		}
		m.renew(m.lease / 3)
	}
}

// renew extends the lease of each job this manager runs; a job whose lease is lost
// stops (another replica runs it), one whose cancellation was asked for is cancelled.
func (m *Manager) renew(timeout time.Duration) {
	m.mu.Lock()
	running := make(map[string]runningJob, len(m.running))
	for id, r := range m.running {
		running[id] = r
	}
	m.mu.Unlock()
	for id, r := range running {
		ctx, cancel := context.WithTimeout(m.base, timeout)
		stop, err := m.store.renew(ctx, id, m.runner, m.lease)
		cancel()
		switch {
		case errors.Is(err, errLeaseLost):
			r.cancel(errLeaseLost)
		case err != nil:
			// The lease may yet be renewed at the next tick; the job runs on meanwhile.
			if m.base.Err() == nil {
				m.log.Warn("renewing a job's lease", zap.String("job", id), zap.Error(err))
			}
		case stop:
			r.cancel(errCancelRequested)
		}
	}
}

// takeOver claims expired jobs, as many as this manager has free slots, and starts
// them (or records them cancelled, if that was asked for).
func (m *Manager) takeOver() {
	m.mu.Lock()
	free := m.cfg.MaxRunning - len(m.running)
	closed := m.closed
	m.mu.Unlock()
	if free <= 0 || closed {
		return
	}
	ctx, cancel := context.WithTimeout(m.base, m.lease/3)
	defer cancel()
	js, err := m.store.claim(ctx, m.runner, m.lease, free)
	if err != nil && m.base.Err() == nil {
		m.log.Warn("looking for jobs to take over", zap.Error(err))
	}
	for _, j := range js {
		switch {
		case j.cancel:
			m.record(context.Background(), Event{JobID: j.ID, State: Cancelled, Message: "cancelled; the privacy charge stays spent"}, nil, "cancelled")
			continue
		case j.takeovers > MaxTakeovers:
			m.log.Error("job not taken over again: the replicas running it stopped too often", zap.String("job", j.ID), zap.Int("takeovers", j.takeovers))
			msg := fmt.Sprintf("interrupted: the replica running it stopped %d times; it is not run again; the privacy charge stays spent", j.takeovers)
			m.record(context.Background(), Event{JobID: j.ID, State: Failed, Message: msg}, nil, msg)
			continue
		}
		m.log.Info("job taken over", zap.String("job", j.ID), zap.String("identity", j.Identity), zap.Int("takeovers", j.takeovers))
		msg := "taken over: the replica running it handed it over as it shut down; it runs again from the start; the privacy charge is not paid again"
		if j.takeovers > 0 {
			msg = "taken over: the replica running it stopped; it runs again from the start; the privacy charge is not paid again"
		}
		if _, err := m.record(context.Background(), Event{JobID: j.ID, State: Queued, Message: msg}, nil, ""); err != nil {
			if !errors.Is(err, errLeaseLost) {
				m.log.Error("recording a job's takeover", zap.String("job", j.ID), zap.Error(err))
			}
			continue
		}
		m.start(j.Job)
	}
}
