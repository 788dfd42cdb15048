package ledger

import (
	"context"
	"fmt"
	"math/big"
	"time"
)

// RecordedLimits are limits recorded for a dataset by RecordLimits (a curator
// records them each time it starts): when they came into force, and the last
// start that found them in force.
type RecordedLimits struct {
	Limits
	// Recorded is when these limits came into force; Confirmed the last start
	// that found them in force (Recorded at first); Starts counts the starts that
	// recorded or found them.
	Recorded, Confirmed time.Time
	Starts              int64
	id                  int64
}

// scanLimits reads a limits_history row.
func scanLimits(scan func(dest ...any) error) (RecordedLimits, error) {
	var r RecordedLimits
	var rec, conf int64
	l := &r.Limits
	err := scan(&r.id, &l.PerIdentity.Epsilon, &l.PerIdentity.Delta, &l.Dataset.Epsilon, &l.Dataset.Delta,
		&l.Patient.PerIdentity.Epsilon, &l.Patient.PerIdentity.Delta, &l.Patient.Dataset.Epsilon, &l.Patient.Dataset.Delta,
		&rec, &conf, &r.Starts)
	if err != nil {
		return r, err
	}
	r.Recorded, r.Confirmed = time.Unix(0, rec).UTC(), time.Unix(0, conf).UTC()
	if err := r.Limits.Validate(); err != nil {
		return r, fmt.Errorf("ledger: corrupt recorded limits: %w", err)
	}
	return r, nil
}

// inForce returns the limits in force for dataset: the last recorded, or, when
// none are, the limits the store was opened with (found false).
func (s *Ledger) inForce(ctx context.Context, q Querier, dataset string) (Limits, bool, error) {
	r, found, err := s.recorded(ctx, q, dataset)
	if err != nil || !found {
		return s.limits, false, err
	}
	return r.Limits, true, nil
}

func (s *Ledger) recorded(ctx context.Context, q Querier, dataset string) (RecordedLimits, bool, error) {
	rows, err := q.Query(ctx, s.qInForce, dataset)
	if err != nil {
		return RecordedLimits{}, false, fmt.Errorf("ledger: read the limits in force: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		return RecordedLimits{}, false, rows.Err()
	}
	r, err := scanLimits(rows.Scan)
	if err != nil {
		return RecordedLimits{}, false, fmt.Errorf("ledger: limits of dataset %q: %w", dataset, err)
	}
	return r, true, nil
}

// RecordLimits is a curator's start: it records Limits() as the limits in force
// for dataset, with the time, when none are recorded, and notes the start when
// they equal the limits in force. When they differ, it records them as the new
// limits in force if change is set (the previous ones stay in the history, and
// every Ledger sharing the database enforces the new ones from its next charge),
// and otherwise records nothing and returns a *LimitsDifferError
// (errors.Is(err, ErrLimitsDiffer)).
func (s *Ledger) RecordLimits(ctx context.Context, dataset string, change bool) (LimitsStart, error) {
	if err := checkName("dataset", dataset); err != nil {
		return LimitsStart{}, err
	}
	l := s.limits
	var out LimitsStart
	err := s.e.Write(ctx, Lock{Dataset: dataset}, func(q Querier) error {
		out = LimitsStart{}
		now := time.Now().UnixNano()
		cur, found, err := s.recorded(ctx, q, dataset)
		if err != nil {
			return err
		}
		switch {
		case found && cur.Limits == l:
			if _, err := q.Exec(ctx, s.qConfirm, now, cur.id); err != nil {
				return err
			}
			cur.Confirmed, cur.Starts = time.Unix(0, now).UTC(), cur.Starts+1
			out.InForce = cur
			return nil
		case found && !change:
			return &LimitsDifferError{Dataset: dataset, InForce: cur, Configured: l}
		case found:
			prev := cur
			out.Previous = &prev
		default:
			out.First = true
		}
		if _, err := q.Exec(ctx, s.qNewLimits, dataset, l.PerIdentity.Epsilon, l.PerIdentity.Delta, l.Dataset.Epsilon, l.Dataset.Delta,
			l.Patient.PerIdentity.Epsilon, l.Patient.PerIdentity.Delta, l.Patient.Dataset.Epsilon, l.Patient.Dataset.Delta, now, now); err != nil {
			return err
		}
		out.InForce, _, err = s.recorded(ctx, q, dataset)
		return err
	})
	if err != nil {
		return LimitsStart{}, wrap("record limits", err)
	}
	return out, nil
}

// RecordedLimits returns the limits in force for dataset, and false if none
// were recorded (a ledger written before schema version 3, or never served).
func (s *Ledger) RecordedLimits(ctx context.Context, dataset string) (RecordedLimits, bool, error) {
	if err := checkName("dataset", dataset); err != nil {
		return RecordedLimits{}, false, err
	}
	var r RecordedLimits
	var found bool
	err := s.e.Read(ctx, func(q Querier) error {
		var err error
		r, found, err = s.recorded(ctx, q, dataset)
		return err
	})
	if err != nil {
		return RecordedLimits{}, false, wrap("recorded limits", err)
	}
	return r, found, nil
}

// LimitsHistory returns every set of limits recorded for dataset, oldest first;
// the last is in force.
func (s *Ledger) LimitsHistory(ctx context.Context, dataset string) ([]RecordedLimits, error) {
	if err := checkName("dataset", dataset); err != nil {
		return nil, err
	}
	var out []RecordedLimits
	err := s.e.Read(ctx, func(q Querier) error {
		out = out[:0] // an engine may run fn again (Engine)
		return EachRow(ctx, q, s.qHistory, []any{dataset}, func(scan func(...any) error) error {
			r, err := scanLimits(scan)
			if err != nil {
				return fmt.Errorf("ledger: limits of dataset %q: %w", dataset, err)
			}
			out = append(out, r)
			return nil
		})
	})
	if err != nil {
		return nil, wrap("limits history", err)
	}
	return out, nil
}

// ExactCost is a cost held as exact rationals: a sum of recorded float64 costs,
// or a limit minus such a sum, with no rounding.
type ExactCost struct {
	Epsilon, Delta *big.Rat
}

// Cost rounds c to the nearest float64 values.
func (c ExactCost) Cost() Cost {
	e, _ := c.Epsilon.Float64()
	d, _ := c.Delta.Float64()
	return Cost{Epsilon: e, Delta: d}
}

// ReportRow is the state of one identity, or of the dataset over all its
// identities, under one relation, exact.
type ReportRow struct {
	// Identity is empty for the dataset's row.
	Identity string
	// Charges counts the records counting towards the relation's totals.
	Charges int
	// Spent is the effective committed total (as in Balance), exact.
	Spent ExactCost
	// Reserved is what the live reservations counting towards the relation hold
	// (releases being computed, Ledger.Reserve), exact, and Reservations their
	// number: a charge counts them as spent until they are cancelled or expire.
	Reserved     ExactCost
	Reservations int
	// OwnLeft is max(0, limit − Spent − Reserved) for the row's own limit:
	// PerIdentity for an identity, Dataset for the dataset.
	OwnLeft ExactCost
	// Left is what a charge under the relation may still spend: for the dataset,
	// OwnLeft; for an identity, min(OwnLeft, the dataset's OwnLeft) component by
	// component, since a charge must fit both limits.
	Left ExactCost
	// OverLimit is set when Spent exceeds the row's own limit (beyond the slack):
	// spending made under higher limits than those reported against, which were
	// lowered since.
	OverLimit bool
}

// PatientRow is the whole-patient total of one identity, or of the dataset over
// all its identities.
type PatientRow struct {
	// Identity is empty for the dataset's row.
	Identity string
	Total    PatientTotal
	// Reserved is what the live reservations hold, which the cap counts.
	Reserved PatientTotal
	// Cap is the row's whole-patient cap (zero ε: none); Left is max(0, cap −
	// total − reserved) when there is a cap and both are bounded.
	Cap  Cost
	Left ExactCost
	// OverLimit is set when the total exceeds the cap (beyond the slack), or is not
	// bounded under a cap: releases made before the cap was set or lowered.
	OverLimit bool
}

// PatientReport is the whole-patient account of a dataset: what one patient can
// lose, by basic composition of every charge's whole-patient cost, over every
// relation.
type PatientReport struct {
	Dataset    PatientRow
	Identities []PatientRow
}

// RelationReport is a dataset's state under one neighbour relation. Figures of
// different relations are never added (see the package documentation).
type RelationReport struct {
	Relation   Relation
	Dataset    ReportRow
	Identities []ReportRow
}

// Report is the exact state of a dataset's budget under given limits.
type Report struct {
	Dataset string
	Limits  Limits
	// Patient is the whole-patient account, over every relation.
	Patient   PatientReport
	Relations []RelationReport
	// Stored is what the releases keep for replay (Ledger.Stored).
	Stored []StoredRow
}

// Report returns the dataset's exact totals, committed and reserved, and
// remainders under limits (which need not be Limits(): a reader passes the
// recorded ones), one RelationReport per relation with a record or a live
// reservation counting towards it, in the order of Relations, each
// identity's remainder capped by the dataset's.
func (s *Ledger) Report(ctx context.Context, dataset string, limits Limits) (Report, error) {
	if err := checkName("dataset", dataset); err != nil {
		return Report{}, err
	}
	if err := limits.Validate(); err != nil {
		return Report{}, err
	}
	d, rt, _, err := s.readViews(ctx, dataset, "")
	if err != nil {
		return Report{}, wrap("report", err)
	}
	out := Report{Dataset: dataset, Limits: limits}
	if out.Stored, err = s.Stored(ctx, dataset); err != nil {
		return Report{}, err
	}
	prow := func(identity string, t, res PatientTotal, cap Cost) PatientRow {
		r := PatientRow{Identity: identity, Total: t.clone(), Reserved: res.clone(), Cap: cap}
		if cap.Epsilon > 0 {
			r.OverLimit = !fitsPatient(newPatientTotal(), t, cap) && t.Charges > 0
			if h := heldPatient(t, res); h.Bounded() {
				var tt total
				tt.eps.Set(h.Epsilon)
				tt.delta.Set(h.Delta)
				r.Left = exactRemaining(&tt, cap)
			}
		}
		return r
	}
	ids := identitiesOf(d, rt)
	out.Patient.Dataset = prow("", d.dsPatient, rt.dsPatient, limits.Patient.Dataset)
	for _, id := range ids {
		out.Patient.Identities = append(out.Patient.Identities, prow(id, d.patientOf(id), rt.patientOf(id), limits.Patient.PerIdentity))
	}
	for _, rel := range Relations {
		dt, n := d.datasetEffective(rel)
		dr, nr := rt.datasetEffective(rel)
		if n+nr == 0 {
			continue
		}
		dsLeft := exactRemaining(held(dt, dr), limits.Dataset)
		rr := RelationReport{Relation: rel, Dataset: ReportRow{
			Charges: int(n), Spent: exactOf(dt), Reserved: exactOf(dr), Reservations: int(nr),
			OwnLeft: dsLeft, Left: dsLeft, OverLimit: over(dt, limits.Dataset),
		}}
		for _, id := range ids {
			t, m := d.effective(id, rel)
			r, mr := rt.effective(id, rel)
			if m+mr == 0 {
				continue
			}
			own := exactRemaining(held(t, r), limits.PerIdentity)
			rr.Identities = append(rr.Identities, ReportRow{
				Identity: id, Charges: int(m), Spent: exactOf(t), Reserved: exactOf(r), Reservations: int(mr), OwnLeft: own,
				Left:      ExactCost{Epsilon: minRat(own.Epsilon, dsLeft.Epsilon), Delta: minRat(own.Delta, dsLeft.Delta)},
				OverLimit: over(t, limits.PerIdentity),
			})
		}
		out.Relations = append(out.Relations, rr)
	}
	return out, nil
}

// over reports whether t exceeds limit beyond the slack (a charge of nothing
// would not have fitted).
func over(t *total, limit Cost) bool {
	var zero total
	return !zero.fitsTotal(t, limit) && (t.eps.Sign() > 0 || t.delta.Sign() > 0)
}

func exactOf(t *total) ExactCost {
	return ExactCost{Epsilon: new(big.Rat).Set(&t.eps), Delta: new(big.Rat).Set(&t.delta)}
}

// exactRemaining is max(0, limit − t), exact.
func exactRemaining(t *total, limit Cost) ExactCost {
	f := func(l float64, spent *big.Rat) *big.Rat {
		r := new(big.Rat).Sub(exact(l), spent)
		if r.Sign() < 0 {
			r.SetInt64(0)
		}
		return r
	}
	return ExactCost{Epsilon: f(limit.Epsilon, &t.eps), Delta: f(limit.Delta, &t.delta)}
}

func minRat(a, b *big.Rat) *big.Rat {
	if a.Cmp(b) <= 0 {
		return new(big.Rat).Set(a)
	}
	return new(big.Rat).Set(b)
}
