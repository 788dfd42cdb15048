package ledger

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/privacy"
)

// PatientCost is the whole-patient (record-level) cost of a charge
// (privacy.PatientCost): the (ε, δ) for which the release is differentially
// private when one patient's record is replaced by any other, converted from
// the relation its own Cost is stated for. It is what a privacy officer adds
// up: every charge's figure is a guarantee under the same relation, so they
// compose (see the package documentation), which the per-relation costs never do.
type PatientCost = privacy.PatientCost

// Unbounded is the PatientCost of a release with no finite whole-patient figure.
var Unbounded = privacy.Unbounded

// DefaultPatientCost is the whole-patient cost of a charge of cost c under rel
// when the charge states none (privacy.DefaultPatientCost).
func DefaultPatientCost(rel Relation, c Cost) PatientCost { return privacy.DefaultPatientCost(rel, c) }

// wholePatientShort matches the whole-patient clause the curator wrote into a
// projection's description from 2026-11 on: "whole patient (50 units): ε=134 at
// δ=1e-05" (ε rounded up), or "whole patient: no guarantee".
var wholePatientShort = regexp.MustCompile(`whole patient \([^)]*\): ε=([0-9.e+\-]+|∞) at δ=([0-9.e+\-]+)`)

// migratedPatientCost is the whole-patient cost given to a record written before
// schema version 4, from what the record states: for a projection, the
// whole-patient figure its description states (the curator wrote it when it
// released it, for the scaling then in force); for the kinds of the other
// relations, DefaultPatientCost; a projection that states none is unbounded, the
// conservative choice. An exact answer (a query record whose description says so)
// is unbounded.
func migratedPatientCost(kind string, rel Relation, c Cost, description string) PatientCost {
	if kind == KindProjection && rel == RelationFeatureUnit {
		m := wholePatientShort.FindStringSubmatch(description)
		if m == nil || m[1] == "∞" {
			return Unbounded
		}
		e, err1 := strconv.ParseFloat(m[1], 64)
		d, err2 := strconv.ParseFloat(m[2], 64)
		p := PatientCost{Epsilon: e, Delta: d}
		if err1 != nil || err2 != nil || p.Validate() != nil {
			return Unbounded
		}
		return p
	}
	if kind == KindQuery && len(description) >= 12 && description[:12] == "exact answer" {
		return Unbounded
	}
	return DefaultPatientCost(rel, c)
}

// PatientTotal is an exact whole-patient total: the sum of the finite figures of
// its charges, by basic composition, and how many charges have none.
type PatientTotal struct {
	// Epsilon and Delta are Σεᵢ and Σδᵢ over the charges with a finite figure.
	Epsilon, Delta *big.Rat
	// Unbounded counts the charges with no finite figure: while it is above 0, the
	// total is not bounded, whatever Epsilon says.
	Unbounded int64
	// Charges counts every charge of the total (zero-cost records included).
	Charges int64
	// Rho is Σρᵢ over the charges that state a ρ (PatientCost.Rho), and RhoDelta
	// Σδᵢ over the same charges.
	Rho, RhoDelta *big.Rat
}

func newPatientTotal() PatientTotal {
	return PatientTotal{Epsilon: new(big.Rat), Delta: new(big.Rat), Rho: new(big.Rat), RhoDelta: new(big.Rat)}
}

// Bounded reports whether every charge of t has a finite figure.
func (t PatientTotal) Bounded() bool { return t.Unbounded == 0 }

// Cost rounds t to float64s: +Inf for ε when it is not bounded.
func (t PatientTotal) Cost() Cost {
	if !t.Bounded() {
		return Cost{Epsilon: math.Inf(1)}
	}
	e, _ := t.Epsilon.Float64()
	d, _ := t.Delta.Float64()
	return Cost{Epsilon: e, Delta: d}
}

// ZCDP converts the ρ of t's zCDP charges (the Gaussian projections) to (ε, δ) at
// their summed δ: ε = dp.ZCDPEpsilon(Σρ, Σδ). Releases that are ρᵢ-zCDP compose
// to Σρᵢ-zCDP (Bun & Steinke 2016, Lemma 2.3) when their parameters are fixed in
// advance; the ledger enforces the basic-composition total (Epsilon), which holds
// however they were chosen. ok is false when no charge states a ρ.
func (t PatientTotal) ZCDP() (eps, delta float64, ok bool) {
	if t.Rho.Sign() == 0 || t.RhoDelta.Sign() == 0 {
		return 0, 0, false
	}
	rho, _ := t.Rho.Float64()
	rho = math.Nextafter(rho, math.Inf(1))
	d := floatDown(t.RhoDelta)
	return dp.ZCDPEpsilon(rho, d), d, true
}

func (t *PatientTotal) add(p PatientCost) {
	t.Charges++
	if p.Unbounded {
		t.Unbounded++
		return
	}
	t.Epsilon.Add(t.Epsilon, exact(p.Epsilon))
	t.Delta.Add(t.Delta, exact(p.Delta))
	if p.Rho > 0 {
		t.Rho.Add(t.Rho, exact(p.Rho))
		t.RhoDelta.Add(t.RhoDelta, exact(p.Delta))
	}
}

func (t *PatientTotal) addTotal(u PatientTotal) {
	t.Charges += u.Charges
	t.Unbounded += u.Unbounded
	t.Epsilon.Add(t.Epsilon, u.Epsilon)
	t.Delta.Add(t.Delta, u.Delta)
	t.Rho.Add(t.Rho, u.Rho)
	t.RhoDelta.Add(t.RhoDelta, u.RhoDelta)
}

func (t PatientTotal) clone() PatientTotal {
	u := newPatientTotal()
	u.addTotal(t)
	return u
}

func (t PatientTotal) equal(u PatientTotal) bool {
	return t.Charges == u.Charges && t.Unbounded == u.Unbounded && t.Epsilon.Cmp(u.Epsilon) == 0 && t.Delta.Cmp(u.Delta) == 0 &&
		t.Rho.Cmp(u.Rho) == 0 && t.RhoDelta.Cmp(u.RhoDelta) == 0
}

// fitsPatient reports whether t plus add fits cap (a cap whose ε is 0 is off).
func fitsPatient(t, add PatientTotal, cap Cost) bool {
	if cap.Epsilon == 0 {
		return true
	}
	if add.Unbounded > 0 {
		return false
	}
	if !t.Bounded() && (add.Epsilon.Sign() > 0 || add.Delta.Sign() > 0) {
		return false
	}
	return fitsExact(t.Epsilon, add.Epsilon, cap.Epsilon) && fitsExact(t.Delta, add.Delta, cap.Delta)
}

// patientRemaining is max(0, cap − t), rounded toward zero; 0 when t is not bounded.
func patientRemaining(t PatientTotal, cap Cost) Cost {
	if !t.Bounded() {
		return Cost{}
	}
	return Cost{Epsilon: remainder(cap.Epsilon, t.Epsilon), Delta: remainder(cap.Delta, t.Delta)}
}

// PatientBalance is the whole-patient account of an identity and of its dataset:
// the totals, over every relation, of the charges' PatientCost.
type PatientBalance struct {
	Account
	// IdentityTotal is the identity's own total; DatasetTotal that of every identity
	// together, the curator's own estimates included: what one patient can lose from
	// everything released on the dataset.
	IdentityTotal, DatasetTotal PatientTotal
	// IdentityReserved and DatasetReserved are what the live reservations hold
	// (releases being computed, Ledger.Reserve); the caps count them, as a charge does.
	IdentityReserved, DatasetReserved PatientTotal
	// Limits are the caps in force (zero: none); Remaining and DatasetRemaining
	// what the caps leave after the totals and the reservations (zero without a
	// cap, or when a total or a reservation is not bounded).
	Limits                      PatientLimits
	Remaining, DatasetRemaining Cost
}

// Inconsistency is a total kept by the charges that differs from the sum of the
// records (Ledger.Verify).
type Inconsistency struct {
	// What names the total: "identity acme, relation record", "dataset, relation
	// record", "whole patient, identity acme", "whole patient, dataset".
	What string
	// Stored and Recomputed are the two, as text.
	Stored, Recomputed string
}

func (i Inconsistency) String() string {
	return fmt.Sprintf("%s: stored %s, the records sum to %s", i.What, i.Stored, i.Recomputed)
}

// LimitsStart is what RecordLimits found and did.
type LimitsStart struct {
	// InForce are the limits in force after the call.
	InForce RecordedLimits
	// First is set when no limits were recorded before.
	First bool
	// Previous are the limits that were in force before, when the call changed them.
	Previous *RecordedLimits
}

// LimitsDifferError refuses a start whose limits differ from those in force.
type LimitsDifferError struct {
	Dataset    string
	InForce    RecordedLimits
	Configured Limits
}

func (e *LimitsDifferError) Error() string {
	return fmt.Sprintf("ledger: the limits configured for dataset %q (%s) differ from the limits in force, recorded at %s (%s): "+
		"every curator sharing this ledger enforces the limits in force, so a start with other limits must change them explicitly",
		e.Dataset, LimitsText(e.Configured), e.InForce.Recorded.Format("2006-01-02T15:04:05Z07:00"), LimitsText(e.InForce.Limits))
}

// Is makes errors.Is(err, ErrLimitsDiffer) true.
func (e *LimitsDifferError) Is(target error) bool { return target == ErrLimitsDiffer }

// LimitsText prints limits for people.
func LimitsText(l Limits) string {
	s := fmt.Sprintf("per identity ε=%g, δ=%g; dataset ε=%g, δ=%g", l.PerIdentity.Epsilon, l.PerIdentity.Delta, l.Dataset.Epsilon, l.Dataset.Delta)
	if !l.Patient.Enabled() {
		return s + "; whole patient: no cap"
	}
	c := func(c Cost) string {
		if c.Epsilon == 0 {
			return "no cap"
		}
		return fmt.Sprintf("ε=%g, δ=%g", c.Epsilon, c.Delta)
	}
	return s + "; whole patient per identity " + c(l.Patient.PerIdentity) + ", dataset " + c(l.Patient.Dataset)
}

// floatDown is r as a float64 rounded toward zero.
func floatDown(r *big.Rat) float64 {
	f, _ := r.Float64()
	if new(big.Rat).SetFloat64(f).Cmp(r) > 0 {
		f = math.Nextafter(f, 0)
	}
	return f
}
