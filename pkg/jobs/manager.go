package jobs

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/ledger"
)

// Config configures a Manager.
type Config struct {
	// StateDir holds jobs.db.
	StateDir string
	// Dataset names the ledger account's dataset.
	Dataset string
	Ledger  ledger.Store
	Runner  Runner
	Logger  *zap.Logger
	// MaxRunning bounds concurrently running jobs; 0 means 1. Others wait queued.
	MaxRunning int
	// Reservation is how a submission holds the job's cost in the ledger between the
	// budget check and the charge (ledger.Store.Reserve): the curator's owner name, so
	// that its restart frees what a crash left held, and the time to live.
	Reservation ledger.Hold
}

// Manager accepts, runs and reports jobs. It is safe for concurrent use.
type Manager struct {
	cfg   Config
	log   *zap.Logger
	store *store
	slots chan struct{}

	submitMu sync.Mutex // serialises the charge-and-record step of Submit

	mu       sync.Mutex
	closed   bool
	running  map[string]runningJob // started jobs whose goroutine has not returned
	watchers map[string]map[chan Event]struct{}
	wg       sync.WaitGroup
	stop     context.CancelFunc
	base     context.Context

	closeOnce sync.Once
	closeErr  error
}

// runningJob is a started job's handle: cancel stops it, done is closed once its
// goroutine has recorded its final state and returned.
type runningJob struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// NewManager opens the job store and marks jobs left unfinished by an earlier process
// as failed: their charge stays spent.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Ledger == nil || cfg.Runner == nil || cfg.Dataset == "" || cfg.StateDir == "" {
		return nil, errors.New("jobs: StateDir, Dataset, Ledger and Runner are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = 1
	}
	st, err := openStore(filepath.Join(cfg.StateDir, "jobs.db"))
	if err != nil {
		return nil, err
	}
	base, stop := context.WithCancel(context.Background())
	m := &Manager{cfg: cfg, log: cfg.Logger, store: st, slots: make(chan struct{}, cfg.MaxRunning),
		running: map[string]runningJob{}, watchers: map[string]map[chan Event]struct{}{}, base: base, stop: stop}
	ids, err := st.unfinished(context.Background())
	if err != nil {
		st.close()
		return nil, err
	}
	for _, id := range ids {
		if _, err := m.record(context.Background(), Event{JobID: id, State: Failed, Message: "interrupted: the curator stopped while the job was unfinished; its privacy charge stays spent"}, nil, "interrupted by a curator restart"); err != nil {
			st.close()
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

// jobRelation is the default neighbour relation of a job's kind (ledger.JobRelation).
func jobRelation(spec Spec) ledger.Relation { return ledger.JobRelation(spec.Kind()) }

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
// another replica sharing the ledger) is refused with ErrAcceptedElsewhere and never
// run: one charge buys one release.
func (m *Manager) Submit(ctx context.Context, identity, key string, spec Spec) (Job, error) {
	if len(key) > 128 {
		return Job{}, fmt.Errorf("jobs: %w: idempotency key longer than 128 bytes", ErrInvalidSpec)
	}
	if spec.Kind() == "" {
		return Job{}, fmt.Errorf("jobs: %w: exactly one job kind must be set", ErrInvalidSpec)
	}
	if key != "" { // a retry: answer it before planning, which can take seconds
		if existing, err := m.store.get(ctx, jobID(identity, key)); err == nil {
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
	id := jobID(identity, key)
	// Charge and record under one lock, so that a concurrent identical submission to
	// this manager finds the job record below rather than a replayed charge without one.
	m.submitMu.Lock()
	defer m.submitMu.Unlock()
	if existing, err := m.store.get(ctx, id); err == nil {
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
				m.log.Warn("cancelling a job's reservation; it holds its budget until it expires", zap.String("job", id), zap.Error(err))
			}
		}
	}()
	if rec := res.Receipts[0]; rec.Replayed {
		// The ledger already holds this job's charge but this manager's jobs.db has no
		// record of it: another replica sharing the ledger accepted it, or this
		// replica's jobs.db was lost. The job may have run (or be running) elsewhere, so
		// running it here would release a second, independent result for one charge
		// (docs/MATHS.md §7). Refuse; nothing is spent.
		m.log.Warn("job charge replayed without a local job record; not running it",
			zap.String("job", id), zap.String("identity", identity), zap.Bool("has_result", len(rec.Result) > 0))
		return Job{}, &acceptedElsewhereError{id: id}
	}
	now := time.Now().UTC()
	j, created, err := m.store.insert(ctx, Job{ID: id, Identity: identity, Key: key, Spec: spec, State: Queued,
		Cost: plan.Cost, Guarantee: plan.Guarantee, Created: now, Updated: now})
	if err != nil {
		return Job{}, err
	}
	if !created {
		return m.sameSpec(j, spec)
	}
	recs, err := m.cfg.Ledger.Commit(ctx, res, []ledger.Charge{charge})
	if err == nil && recs[0].Replayed {
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
	return plan.Forecast != nil && !plan.Forecast.Informative && !(spec.Kusner != nil && spec.Kusner.Force)
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

func (m *Manager) start(j Job) {
	m.mu.Lock()
	if m.closed { // left queued; marked interrupted at the next start
		m.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(m.base)
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
			cancel()
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
		m.finish(j, nil, ctx.Err())
		return
	}
	if _, err := m.record(context.Background(), Event{JobID: j.ID, State: Running, Message: "running"}, nil, ""); err != nil {
		m.log.Error("recording job state", zap.String("job", j.ID), zap.Error(err))
		m.finish(j, nil, err)
		return
	}
	start := time.Now()
	res, err := m.cfg.Runner.Run(ctx, j.Spec, func(p Progress) {
		if _, err := m.record(context.Background(), Event{JobID: j.ID, State: Running, Step: p.Step, Total: p.Total, Message: p.Message}, nil, ""); err != nil {
			m.log.Error("recording job progress", zap.String("job", j.ID), zap.Error(err))
		}
	})
	m.log.Info("job finished", zap.String("job", j.ID), zap.Duration("duration", time.Since(start)), zap.Bool("ok", err == nil))
	if err != nil {
		m.finish(j, nil, err)
		return
	}
	m.finish(j, &res, nil)
}

// finish records the job's end. A result is also attached to the job's ledger receipt.
func (m *Manager) finish(j Job, res *Result, err error) {
	ctx := context.Background()
	switch {
	case err == nil:
		b, _ := json.Marshal(res)
		if err := m.cfg.Ledger.SetResult(ctx, ledger.Account{Dataset: m.cfg.Dataset, Identity: j.Identity}, "job/"+j.ID, b); err != nil {
			m.log.Error("attaching job result to its ledger receipt", zap.String("job", j.ID), zap.Error(err))
		}
		_, err = m.record(ctx, Event{JobID: j.ID, State: Succeeded, Message: "finished; result released"}, res, "")
		if err != nil {
			m.log.Error("recording job result", zap.String("job", j.ID), zap.Error(err))
		}
	case errors.Is(err, context.Canceled) && m.isClosed():
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

func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// record appends an event durably and wakes the job's watchers.
func (m *Manager) record(ctx context.Context, e Event, res *Result, errMsg string) (Event, error) {
	e.Time = time.Now().UTC()
	e, err := m.store.appendEvent(ctx, e, res, errMsg)
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

// GetAny returns job id whatever its identity (for the operator).
func (m *Manager) GetAny(ctx context.Context, id string) (Job, error) {
	return m.store.get(ctx, id)
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
func (m *Manager) Cancel(ctx context.Context, identity, id string) (Job, error) {
	if err := ctx.Err(); err != nil {
		return Job{}, fmt.Errorf("jobs: cancel job %s: %w", id, err)
	}
	if _, err := m.Get(ctx, identity, id); err != nil {
		return Job{}, err
	}
	m.mu.Lock()
	r, ok := m.running[id]
	m.mu.Unlock()
	if ok {
		r.cancel()
		select {
		case <-r.done:
		case <-ctx.Done():
			return Job{}, fmt.Errorf("jobs: job %s was asked to stop but had not stopped yet: %w", id, ctx.Err())
		}
	}
	return m.Get(ctx, identity, id)
}

// Watch sends identity's job's events after seq `after`, then live events, until the
// job ends or ctx is done.
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
	tick := time.NewTicker(time.Second)
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
		case <-ch:
		case <-tick.C:
		}
	}
}

// CountByState returns how many jobs (of all identities) are in each state.
func (m *Manager) CountByState(ctx context.Context) (map[State]int, error) {
	return m.store.countByState(ctx)
}

// Interrupt stops accepting jobs and interrupts running ones (they are marked failed,
// their charge spent), waiting for them to stop. Reads (Get, List, Watch) keep working
// until Close, so a server can drain its RPCs in between.
func (m *Manager) Interrupt() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.stop()
	m.wg.Wait()
}

// Close interrupts running jobs (see Interrupt) and closes the store.
func (m *Manager) Close() error {
	m.Interrupt()
	m.closeOnce.Do(func() { m.closeErr = m.store.close() })
	return m.closeErr
}
