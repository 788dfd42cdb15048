package rpc

import (
	"context"
	"fmt"
	"math"

	"github.com/privbo/privbo/pkg/ledger"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// wholePatientProto is the WholePatientBudget of a whole-patient balance.
func wholePatientProto(b ledger.PatientBalance) *curatorv1.WholePatientBudget {
	id, ds := b.IdentityTotal.Cost(), b.DatasetTotal.Cost()
	w := &curatorv1.WholePatientBudget{
		Bounded: b.IdentityTotal.Bounded(), DatasetBounded: b.DatasetTotal.Bounded(),
		EpsilonLimit: b.Limits.PerIdentity.Epsilon, DeltaLimit: b.Limits.PerIdentity.Delta,
		DatasetEpsilonLimit: b.Limits.Dataset.Epsilon, DatasetDeltaLimit: b.Limits.Dataset.Delta,
		Statement: ledger.PatientStatement(fmt.Sprintf("identity %s on dataset %s: every release to it", b.Account.Identity, b.Account.Dataset), b.IdentityTotal, b.Limits.PerIdentity),
	}
	if w.Bounded {
		w.EpsilonSpent, w.DeltaSpent = id.Epsilon, id.Delta
	} else {
		w.EpsilonSpent, w.DeltaSpent = finiteSum(b.IdentityTotal)
	}
	if w.DatasetBounded {
		w.DatasetEpsilonSpent, w.DatasetDeltaSpent = ds.Epsilon, ds.Delta
	} else {
		w.DatasetEpsilonSpent, w.DatasetDeltaSpent = finiteSum(b.DatasetTotal)
	}
	w.EpsilonReserved, w.DeltaReserved = finiteSum(b.IdentityReserved)
	w.DatasetEpsilonReserved, w.DatasetDeltaReserved = finiteSum(b.DatasetReserved)
	rem := ledger.Cost{Epsilon: math.Inf(1), Delta: math.Inf(1)}
	capped := false
	for _, c := range []struct{ cap, left ledger.Cost }{{b.Limits.PerIdentity, b.Remaining}, {b.Limits.Dataset, b.DatasetRemaining}} {
		if c.cap.Epsilon > 0 {
			capped = true
			rem.Epsilon, rem.Delta = math.Min(rem.Epsilon, c.left.Epsilon), math.Min(rem.Delta, c.left.Delta)
		}
	}
	if capped {
		w.EpsilonRemaining, w.DeltaRemaining = rem.Epsilon, rem.Delta
	}
	return w
}

// finiteSum is the sum of a total's finite figures (its Epsilon and Delta); 0 for
// the zero PatientTotal.
func finiteSum(t ledger.PatientTotal) (float64, float64) {
	if t.Epsilon == nil || t.Delta == nil {
		return 0, 0
	}
	e, _ := t.Epsilon.Float64()
	d, _ := t.Delta.Float64()
	return e, d
}

// wholePatient returns the caller's whole-patient balance.
func (h *handlers) wholePatient(ctx context.Context, identity string) (*curatorv1.WholePatientBudget, error) {
	b, err := h.cur.PatientBalance(ctx, identity)
	if err != nil {
		return nil, err
	}
	return wholePatientProto(b), nil
}
