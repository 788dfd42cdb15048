package ledger

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"
)

// Charge records c in one atomic, durable transaction. If the account
// already holds c.Key it returns the stored receipt with Replayed set and
// spends nothing, or an error wrapping ErrKeyConflict when the stored
// Kind, Relation or Cost differ from c's. Otherwise it checks both
// limits in every relation c.Relation counts towards and either commits
// the record, durably, before returning, or returns a *BudgetError
// (errors.Is(err, ErrBudgetExceeded)) and writes nothing.
func (s *Ledger) Charge(ctx context.Context, c Charge) (Receipt, error) {
	rs, err := s.chargeAll(ctx, []Charge{c}, txMode{})
	if err != nil {
		return Receipt{}, wrap("charge", err)
	}
	return rs[0], nil
}

// ChargeAll records cs in one atomic, durable transaction, all of them or
// none: releases that are paid for together, such as a study's projection
// and its answers. The charges must be on one dataset, each (identity, key)
// at most once. A charge whose key its account already holds is replayed on
// its own (its receipt has Replayed set; a different kind, relation or cost
// is an ErrKeyConflict and nothing is written). The others are checked
// together: in every relation any of them counts towards, each identity's
// total plus the exact sum of its new charges counting towards it must fit
// the per-identity limit, and the dataset's total plus the sum of all of
// them the dataset's; a *BudgetError (Requested is that sum) refuses them
// all and writes nothing. Receipts come in the order of cs. Charge is
// ChargeAll of one charge.
func (s *Ledger) ChargeAll(ctx context.Context, cs []Charge) ([]Receipt, error) {
	rs, err := s.chargeAll(ctx, cs, txMode{})
	if err != nil {
		return nil, wrap("charge all", err)
	}
	return rs, nil
}

// chargeAll is Charge and ChargeAll: one transaction that replays each charge
// whose key is recorded, reads the limits in force and the totals of the
// charges' identities and of their dataset (never the other identities': a
// charge costs the same whatever their number), checks the others' costs
// together against both limits of every relation they count towards and
// against the whole-patient caps, and records them all or none, updating the
// totals it read. The limits are checked against the committed totals plus the
// live reservations of the dataset (reserve.go). Charges that spend nothing
// (batch.free: a paid identity's answers) read none of these: they fit any
// limit, reservation and cap, and only the totals' numbers of charges change.
// m says whether the transaction records the charges, consumes a reservation
// while it does (Commit), or only reserves them (Reserve), checking what they
// store against the stored-bytes quotas (stored.go).
func (s *Ledger) chargeAll(ctx context.Context, cs []Charge, m txMode) ([]Receipt, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	b, err := newBatch(cs)
	if err != nil {
		return nil, err
	}
	err = s.e.Write(ctx, Lock{Dataset: b.dataset}, func(q Querier) error {
		now := s.now().UnixNano()
		// A commit consumes its reservation first: what it reserved is checked
		// again below as the charges themselves.
		if m.commit != "" {
			if _, err := q.Exec(ctx, s.qUnreserve, b.dataset, m.commit); err != nil {
				return fmt.Errorf("ledger: commit: release the reservation: %w", err)
			}
		}
		if err := s.replay(ctx, q, b); err != nil || len(b.fresh) == 0 {
			return err
		}
		if m.reserve == nil && b.free() {
			// Nothing to check: a record that spends nothing fits any limit, any
			// reservation and any cap (the answers of a paid identity).
			return s.writeCharges(ctx, q, b, nil, now)
		}
		h, err := s.readBudget(ctx, q, b, m, now)
		if err != nil {
			return err
		}
		sums := b.sums()
		if err := h.checkLimits(b, sums); err != nil {
			return err
		}
		if err := h.checkCaps(b, sums); err != nil {
			return err
		}
		if m.reserve != nil {
			if err := s.checkStored(ctx, q, b, h.rt, m.reserve.quota); err != nil {
				return err
			}
			return s.writeReservation(ctx, q, b, m.reserve, now)
		}
		return s.writeCharges(ctx, q, b, h.dt, now)
	})
	if err != nil {
		return nil, err
	}
	return b.out, nil
}

type idKey struct{ identity, key string }

// batch is the charges of one check-and-charge transaction, validated and
// normalised, with their whole-patient costs and their receipts. fresh, the
// charges not recorded yet, is set in the transaction (replay).
type batch struct {
	dataset  string
	cs       []Charge
	patients []PatientCost
	out      []Receipt
	fresh    []int
}

// newBatch validates cs — one dataset, each (identity, key) once — and copies
// them, with −0 made +0 and the whole-patient cost each states or its default.
func newBatch(cs []Charge) (*batch, error) {
	seen := make(map[idKey]bool, len(cs))
	b := &batch{dataset: cs[0].Dataset, cs: slices.Clone(cs), patients: make([]PatientCost, len(cs)), out: make([]Receipt, len(cs))}
	for i := range b.cs {
		c := &b.cs[i]
		if err := c.Validate(); err != nil {
			return nil, err
		}
		if c.Dataset != b.dataset {
			return nil, fmt.Errorf("ledger: charges of one transaction must be on one dataset, got %q and %q", b.dataset, c.Dataset)
		}
		k := idKey{c.Identity, c.Key}
		if seen[k] {
			return nil, fmt.Errorf("ledger: key %q of identity %q is charged twice in one transaction", c.Key, c.Identity)
		}
		seen[k] = true
		c.Cost = normalise(c.Cost)
		c.Result = bytes.Clone(c.Result)
		if c.Patient != nil {
			b.patients[i] = normalisePatient(*c.Patient)
		} else {
			b.patients[i] = DefaultPatientCost(c.Relation, c.Cost)
		}
	}
	return b, nil
}

// replay gives each charge whose key is recorded its stored receipt, or fails
// with ErrKeyConflict if the record differs, and sets b.fresh to the others.
func (s *Ledger) replay(ctx context.Context, q Querier, b *batch) error {
	b.fresh = b.fresh[:0] // an engine may run the transaction again (Engine)
	for i, c := range b.cs {
		stored, found, err := s.get(ctx, q, c.Account, c.Key)
		if err != nil {
			return err
		}
		if !found {
			b.fresh = append(b.fresh, i)
			continue
		}
		if stored.Kind != c.Kind || stored.Relation != c.Relation || stored.Cost != c.Cost {
			return fmt.Errorf("ledger: key %q of identity %q on dataset %q holds %s (%s) ε=%g, δ=%g; request is %s (%s) ε=%g, δ=%g: %w",
				c.Key, c.Identity, c.Dataset, stored.Kind, stored.Relation, stored.Cost.Epsilon, stored.Cost.Delta,
				c.Kind, c.Relation, c.Cost.Epsilon, c.Cost.Delta, ErrKeyConflict)
		}
		stored.Replayed = true
		b.out[i] = stored
	}
	return nil
}

// budgetState is the budget the fresh charges of a transaction are checked
// against: the limits in force, the committed totals of their identities and of
// their dataset, and the sums of the dataset's live reservations.
type budgetState struct {
	limits     Limits
	identities []string // of the fresh charges, in their order
	dt, rt     *datasetTotals
}

// readBudget reads, under the dataset's lock, the limits in force (a change
// recorded by another curator sharing the database applies to this charge), the
// totals of the fresh charges' identities and of the dataset, and what releases
// being computed hold (reserve.go): counted in every check, so that what is
// reserved is never spent twice. A reservation of a fresh key is this release's
// own, by another holder: not counted, and refused (ErrReserved) if m reserves.
func (s *Ledger) readBudget(ctx context.Context, q Querier, b *batch, m txMode, now int64) (*budgetState, error) {
	h := &budgetState{}
	for _, i := range b.fresh {
		if !slices.Contains(h.identities, b.cs[i].Identity) {
			h.identities = append(h.identities, b.cs[i].Identity)
		}
	}
	var err error
	if h.limits, _, err = s.inForce(ctx, q, b.dataset); err != nil {
		return nil, err
	}
	if h.dt, err = s.totalsOf(ctx, q, b.dataset, h.identities); err != nil {
		return nil, err
	}
	freshKeys := make(map[idKey]bool, len(b.fresh))
	for _, i := range b.fresh {
		freshKeys[idKey{b.cs[i].Identity, b.cs[i].Key}] = true
	}
	h.rt, err = s.reserved(ctx, q, b.dataset, now, func(identity, key string) (bool, error) {
		if !freshKeys[idKey{identity, key}] {
			return true, nil
		}
		if m.reserve != nil {
			return false, fmt.Errorf("ledger: key %q of identity %q on dataset %q: %w", key, identity, b.dataset, ErrReserved)
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// free reports whether no fresh charge spends anything: each costs zero and has
// a zero (bounded) whole-patient cost. (What a charge stores is checked when it is
// reserved, not when it is recorded.)
func (b *batch) free() bool {
	for _, i := range b.fresh {
		if b.cs[i].Cost != (Cost{}) || b.patients[i] != (PatientCost{}) {
			return false
		}
	}
	return true
}

// sums are the exact sums of the fresh charges, kept as the totals are: per
// identity and relation, per relation for the dataset, and whole-patient.
func (b *batch) sums() *datasetTotals {
	d := newDatasetTotals()
	for _, i := range b.fresh {
		c := b.cs[i]
		d.add(c.Identity, c.Relation, c.Cost, b.patients[i])
	}
	return d
}

// checkLimits checks both limits, in every relation a fresh charge counts
// towards (in the order the charges name them), against the exact effective
// totals held (committed and reserved) plus the exact effective sum of the fresh
// charges: every identity's first, then the dataset's.
func (h *budgetState) checkLimits(b *batch, sums *datasetTotals) error {
	var rels []Relation
	for _, i := range b.fresh {
		for _, r := range b.cs[i].Relation.CountsTowards() {
			if !slices.Contains(rels, r) {
				rels = append(rels, r)
			}
		}
	}
	for _, id := range h.identities {
		for _, r := range rels {
			add, n := sums.effective(id, r)
			if n == 0 {
				continue
			}
			if t := h.held(id, r); !t.fitsTotal(add, h.limits.PerIdentity) {
				return &BudgetError{Scope: ScopeIdentity, Account: Account{Dataset: b.dataset, Identity: id}, Relation: r,
					Requested: add.cost(), Remaining: t.remaining(h.limits.PerIdentity), Limit: h.limits.PerIdentity,
					Reserved: h.rt.effectiveOf(id, r).cost()}
			}
		}
	}
	for _, r := range rels {
		add := sums.effectiveOf(datasetRow, r)
		if t := h.held(datasetRow, r); !t.fitsTotal(add, h.limits.Dataset) {
			return &BudgetError{Scope: ScopeDataset, Account: b.cs[b.fresh[0]].Account, Relation: r,
				Requested: add.cost(), Remaining: t.remaining(h.limits.Dataset), Limit: h.limits.Dataset,
				Reserved: h.rt.effectiveOf(datasetRow, r).cost()}
		}
	}
	return nil
}

// held is who's (an identity's, or datasetRow's) effective committed total under
// r plus its reserved one.
func (h *budgetState) held(who string, r Relation) *total {
	return held(h.dt.effectiveOf(who, r), h.rt.effectiveOf(who, r))
}

// checkCaps checks the whole-patient caps: every identity's, then the dataset's.
func (h *budgetState) checkCaps(b *batch, sums *datasetTotals) error {
	check := func(scope, who string, a Account, cap Cost) error {
		have, add := heldPatient(*h.dt.patientRef(who), *h.rt.patientRef(who)), *sums.patientRef(who)
		if fitsPatient(have, add, cap) {
			return nil
		}
		var reserved Cost
		if r := h.rt.patientRef(who); r.Bounded() {
			reserved = r.Cost()
		}
		return &BudgetError{Scope: scope, Account: a, Relation: RelationRecord, WholePatient: true, Unbounded: add.Unbounded > 0,
			Requested: add.Cost(), Remaining: patientRemaining(have, cap), Limit: cap, Reserved: reserved}
	}
	for _, id := range h.identities {
		if err := check(ScopeIdentity, id, Account{Dataset: b.dataset, Identity: id}, h.limits.Patient.PerIdentity); err != nil {
			return err
		}
	}
	return check(ScopeDataset, datasetRow, b.cs[b.fresh[0]].Account, h.limits.Patient.Dataset)
}

// writeReservation records the fresh charges as the reservation r.
func (s *Ledger) writeReservation(ctx context.Context, q Querier, b *batch, r *reserveRows, now int64) error {
	for _, i := range b.fresh {
		c, p := b.cs[i], b.patients[i]
		if _, err := q.Exec(ctx, s.qReserve, c.Dataset, c.Identity, c.Key, r.token, r.owner, c.Kind, string(c.Relation),
			c.Cost.Epsilon, c.Cost.Delta, p.Epsilon, p.Delta, p.Rho, boolInt(p.Unbounded), now, r.expiresNS, c.Stored); err != nil {
			return fmt.Errorf("ledger: reserve: record: %w", err)
		}
		b.out[i] = Receipt{Account: c.Account, Key: c.Key, Kind: c.Kind, Relation: c.Relation, Description: c.Description,
			Cost: c.Cost, Patient: p}
	}
	return nil
}

// whoRel names a row of the totals table: an identity (or datasetRow) and a
// relation.
type whoRel struct {
	who string
	rel Relation
}

// changed are the totals a transaction changed, in the order it first changed
// them, and how many charges each gained.
type changed struct {
	rels    []whoRel
	whos    []string // whole-patient totals
	added   map[whoRel]int64
	patient map[string]int64
}

// note counts a charge of identity under r in the identity's totals and the
// dataset's.
func (ch *changed) note(identity string, r Relation) {
	for _, who := range []string{identity, datasetRow} {
		k := whoRel{who, r}
		if ch.added[k] == 0 {
			ch.rels = append(ch.rels, k)
		}
		ch.added[k]++
		if ch.patient[who] == 0 {
			ch.whos = append(ch.whos, who)
		}
		ch.patient[who]++
	}
}

// writeCharges records each fresh charge, and adds its cost to the totals of its
// own relation only, the identity's and the dataset's (the implied relations'
// totals are sums over relations, formed when read), and its whole-patient cost
// to the identity's and the dataset's whole-patient totals, in dt; then it writes
// each total it changed once (writeTotals). With dt nil the charges are free
// (batch.free) and only the totals' numbers of charges change.
func (s *Ledger) writeCharges(ctx context.Context, q Querier, b *batch, dt *datasetTotals, now int64) error {
	ch := changed{added: make(map[whoRel]int64), patient: make(map[string]int64)}
	for _, i := range b.fresh {
		c, p := b.cs[i], b.patients[i]
		if _, err := q.Exec(ctx, s.qInsert, c.Dataset, c.Identity, c.Key, c.Kind, string(c.Relation), c.Description,
			c.Cost.Epsilon, c.Cost.Delta, p.Epsilon, p.Delta, p.Rho, boolInt(p.Unbounded), c.Result, now, c.Stored); err != nil {
			return fmt.Errorf("ledger: charge: record: %w", err)
		}
		if dt != nil {
			dt.add(c.Identity, c.Relation, c.Cost, p)
		}
		ch.note(c.Identity, c.Relation)
		b.out[i] = Receipt{
			Account: c.Account, Key: c.Key, Kind: c.Kind, Relation: c.Relation, Description: c.Description,
			Cost: c.Cost, Patient: p, Result: c.Result, ResultSize: len(c.Result),
			Created: time.Unix(0, now).UTC(),
		}
	}
	if err := s.writeStored(ctx, q, b); err != nil {
		return err
	}
	return s.writeTotals(ctx, q, b.dataset, dt, &ch)
}

// writeTotals writes each total of dt that ch names, with the number of charges
// it gained; with dt nil, it adds the numbers of charges only, to the totals as
// they are (or to zero totals).
func (s *Ledger) writeTotals(ctx context.Context, q Querier, dataset string, dt *datasetTotals, ch *changed) error {
	upsert, patientUpsert := s.qCount, s.qPatientCount
	if dt != nil {
		upsert, patientUpsert = s.qUpsert, s.qPatientUpsert
	} else {
		dt = newDatasetTotals()
	}
	for _, k := range ch.rels {
		t := dt.own(k.who, k.rel)
		if _, err := q.Exec(ctx, upsert, dataset, k.who, string(k.rel), encodeRat(&t.t.eps), encodeRat(&t.t.delta), ch.added[k]); err != nil {
			return fmt.Errorf("ledger: charge: update totals: %w", err)
		}
	}
	for _, who := range ch.whos {
		pt := dt.patientRef(who)
		if _, err := q.Exec(ctx, patientUpsert, dataset, who, encodeRat(pt.Epsilon), encodeRat(pt.Delta),
			encodeRat(pt.Rho), encodeRat(pt.RhoDelta), pt.Unbounded, ch.patient[who]); err != nil {
			return fmt.Errorf("ledger: charge: update whole-patient totals: %w", err)
		}
	}
	return nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// normalisePatient turns −0 into +0.
func normalisePatient(p PatientCost) PatientCost {
	p.Epsilon += 0
	p.Delta += 0
	p.Rho += 0
	return p
}
