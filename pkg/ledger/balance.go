package ledger

import (
	"context"
	"slices"
)

// readViews reads, outside a transaction, the limits in force, the totals of
// dataset and of identity (every identity's when identity is empty: listings),
// and the dataset's live reservations.
func (s *Ledger) readViews(ctx context.Context, dataset, identity string) (d, rt *datasetTotals, l Limits, err error) {
	err = s.e.Read(ctx, func(q Querier) error {
		var err error
		if l, _, err = s.inForce(ctx, q, dataset); err != nil {
			return err
		}
		if identity == "" {
			d, err = s.totals(ctx, q, dataset)
		} else {
			d, err = s.totalsOf(ctx, q, dataset, []string{identity})
		}
		if err != nil {
			return err
		}
		rt, _, err = s.liveReservations(ctx, q, dataset, s.now().UnixNano(), nil)
		return err
	})
	return d, rt, l, err
}

// held is t plus u, a new total.
func held(t, u *total) *total {
	h := new(total)
	h.addTotal(t)
	h.addTotal(u)
	return h
}

// identitiesOf is the sorted union of the identities of d and of rt.
func identitiesOf(d, rt *datasetTotals) []string {
	ids := slices.Concat(d.identities, rt.identities)
	slices.Sort(ids)
	return slices.Compact(ids)
}

// Balance returns the effective totals of a and of its dataset under
// rel, committed and reserved: what a charge under rel is checked against
// (for RelationRecord, a charge must also fit the RelationFeatureUnit
// balance).
func (s *Ledger) Balance(ctx context.Context, a Account, rel Relation) (Balance, error) {
	if err := a.Validate(); err != nil {
		return Balance{}, err
	}
	if err := rel.Validate(); err != nil {
		return Balance{}, err
	}
	d, rt, limits, err := s.readViews(ctx, a.Dataset, a.Identity)
	if err != nil {
		return Balance{}, wrap("balance", err)
	}
	b, _ := balanceOf(d, rt, limits, a, rel)
	return b, nil
}

// balanceOf returns a's effective balance under rel against limits, the
// committed totals d and the live reservations rt counted as a charge counts
// them, and the number of records and reservations counting towards it.
func balanceOf(d, rt *datasetTotals, limits Limits, a Account, rel Relation) (Balance, int64) {
	ds, _ := d.datasetEffective(rel)
	dsr, _ := rt.datasetEffective(rel)
	id, n := d.effective(a.Identity, rel)
	idr, m := rt.effective(a.Identity, rel)
	return Balance{
		Account:          a,
		Relation:         rel,
		Spent:            id.cost(),
		Reserved:         idr.cost(),
		Remaining:        held(id, idr).remaining(limits.PerIdentity),
		DatasetSpent:     ds.cost(),
		DatasetReserved:  dsr.cost(),
		DatasetRemaining: held(ds, dsr).remaining(limits.Dataset),
		Charges:          int(n),
		Reservations:     int(m),
		Limits:           limits,
	}, n + m
}

// PatientBalance returns the whole-patient totals of a and of its dataset, across
// every relation, committed and reserved, with the caps in force.
func (s *Ledger) PatientBalance(ctx context.Context, a Account) (PatientBalance, error) {
	if err := a.Validate(); err != nil {
		return PatientBalance{}, err
	}
	d, rt, limits, err := s.readViews(ctx, a.Dataset, a.Identity)
	if err != nil {
		return PatientBalance{}, wrap("whole-patient balance", err)
	}
	return patientBalanceOf(d, rt, limits, a), nil
}

func patientBalanceOf(d, rt *datasetTotals, limits Limits, a Account) PatientBalance {
	b := PatientBalance{Account: a, IdentityTotal: d.patientOf(a.Identity).clone(), DatasetTotal: d.dsPatient.clone(),
		IdentityReserved: rt.patientOf(a.Identity).clone(), DatasetReserved: rt.dsPatient.clone(), Limits: limits.Patient}
	if c := limits.Patient.PerIdentity; c.Epsilon > 0 {
		b.Remaining = patientRemaining(heldPatient(b.IdentityTotal, b.IdentityReserved), c)
	}
	if c := limits.Patient.Dataset; c.Epsilon > 0 {
		b.DatasetRemaining = patientRemaining(heldPatient(b.DatasetTotal, b.DatasetReserved), c)
	}
	return b
}

// heldPatient is the whole-patient total t plus the reserved r, a new total.
func heldPatient(t, r PatientTotal) PatientTotal {
	h := t.clone()
	h.addTotal(r)
	return h
}

// Accounts returns one balance per (identity, relation) of the dataset
// that has at least one record or live reservation counting towards it (a
// zero-cost one counts), sorted by identity and then in the order of
// Relations.
func (s *Ledger) Accounts(ctx context.Context, dataset string) ([]Balance, error) {
	if err := checkName("dataset", dataset); err != nil {
		return nil, err
	}
	d, rt, limits, err := s.readViews(ctx, dataset, "")
	if err != nil {
		return nil, wrap("accounts", err)
	}
	var out []Balance
	for _, id := range identitiesOf(d, rt) {
		for _, rel := range Relations {
			if b, n := balanceOf(d, rt, limits, Account{Dataset: dataset, Identity: id}, rel); n > 0 {
				out = append(out, b)
			}
		}
	}
	return out, nil
}

// DatasetTotals returns the dataset's effective totals, one per relation
// that has at least one record or live reservation counting towards it, in
// the order of Relations. A dataset without either has none.
func (s *Ledger) DatasetTotals(ctx context.Context, dataset string) ([]DatasetBalance, error) {
	if err := checkName("dataset", dataset); err != nil {
		return nil, err
	}
	d, rt, limits, err := s.readViews(ctx, dataset, "")
	if err != nil {
		return nil, wrap("dataset totals", err)
	}
	var out []DatasetBalance
	for _, rel := range Relations {
		t, n := d.datasetEffective(rel)
		r, m := rt.datasetEffective(rel)
		if n+m > 0 {
			out = append(out, DatasetBalance{
				Dataset: dataset, Relation: rel,
				Spent: t.cost(), Reserved: r.cost(), Remaining: held(t, r).remaining(limits.Dataset),
				Charges: int(n), Reservations: int(m), Limits: limits,
			})
		}
	}
	return out, nil
}
