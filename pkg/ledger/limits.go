package ledger

import (
	"context"
	"fmt"
	"math/big"
	"time"
)

// RecordedLimits are the limits a store enforced for a dataset, as recorded by
// RecordLimits (a curator records them each time it starts), and when.
type RecordedLimits struct {
	Limits
	Recorded time.Time
}

func (s *store) RecordLimits(ctx context.Context, dataset string) error {
	if err := checkName("dataset", dataset); err != nil {
		return err
	}
	l := s.limits
	err := s.e.Write(ctx, Lock{Dataset: dataset}, func(q Querier) error {
		_, err := q.Exec(ctx, s.qRecordLimits, dataset, l.PerIdentity.Epsilon, l.PerIdentity.Delta,
			l.Dataset.Epsilon, l.Dataset.Delta, time.Now().UnixNano())
		return err
	})
	if err != nil {
		return wrap("record limits", err)
	}
	return nil
}

func (s *store) RecordedLimits(ctx context.Context, dataset string) (RecordedLimits, bool, error) {
	if err := checkName("dataset", dataset); err != nil {
		return RecordedLimits{}, false, err
	}
	var r RecordedLimits
	var found bool
	err := s.e.Read(ctx, func(q Querier) error {
		var ns int64
		var err error
		found, err = QueryRow(ctx, q, s.qRecordedLimits, []any{dataset},
			&r.PerIdentity.Epsilon, &r.PerIdentity.Delta, &r.Dataset.Epsilon, &r.Dataset.Delta, &ns)
		r.Recorded = time.Unix(0, ns).UTC()
		return err
	})
	if err != nil {
		return RecordedLimits{}, false, wrap("recorded limits", err)
	}
	if found {
		if err := r.Limits.Validate(); err != nil {
			return RecordedLimits{}, false, fmt.Errorf("ledger: corrupt recorded limits of dataset %q: %w", dataset, err)
		}
	}
	return r, found, nil
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
	// Spent is the effective total (as in Balance), exact.
	Spent ExactCost
	// OwnLeft is max(0, limit − Spent) for the row's own limit: PerIdentity for
	// an identity, Dataset for the dataset.
	OwnLeft ExactCost
	// Left is what a charge under the relation may still spend: for the dataset,
	// OwnLeft; for an identity, min(OwnLeft, the dataset's OwnLeft) component by
	// component, since a charge must fit both limits.
	Left ExactCost
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
	Dataset   string
	Limits    Limits
	Relations []RelationReport
}

func (s *store) Report(ctx context.Context, dataset string, limits Limits) (Report, error) {
	if err := checkName("dataset", dataset); err != nil {
		return Report{}, err
	}
	if err := limits.Validate(); err != nil {
		return Report{}, err
	}
	d, err := s.readTotals(ctx, dataset)
	if err != nil {
		return Report{}, wrap("report", err)
	}
	out := Report{Dataset: dataset, Limits: limits}
	for _, rel := range Relations {
		dt, n := d.datasetEffective(rel)
		if n == 0 {
			continue
		}
		dsLeft := exactRemaining(dt, limits.Dataset)
		rr := RelationReport{Relation: rel, Dataset: ReportRow{
			Charges: int(n), Spent: exactOf(dt), OwnLeft: dsLeft, Left: dsLeft,
		}}
		for _, id := range d.identities {
			t, m := d.effective(id, rel)
			if m == 0 {
				continue
			}
			own := exactRemaining(t, limits.PerIdentity)
			rr.Identities = append(rr.Identities, ReportRow{
				Identity: id, Charges: int(m), Spent: exactOf(t), OwnLeft: own,
				Left: ExactCost{Epsilon: minRat(own.Epsilon, dsLeft.Epsilon), Delta: minRat(own.Delta, dsLeft.Delta)},
			})
		}
		out.Relations = append(out.Relations, rr)
	}
	return out, nil
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
