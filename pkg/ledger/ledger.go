package ledger

import (
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/privbo/privbo/pkg/dp/privacy"
)

// Cost is a privacy cost (ε, δ), stated under a neighbour relation
// (privacy.Cost). Under basic composition the costs of the records of an
// account under one relation add up, component by component.
type Cost = privacy.Cost

// normalise turns −0 into +0 so that stored costs compare and print plainly.
func normalise(c Cost) Cost { return Cost{Epsilon: c.Epsilon + 0, Delta: c.Delta + 0} }

// Account is the unit a budget is kept for: one modeler identity on one
// dataset. Both fields are required; the curator records its own releases
// under a reserved identity such as "_curator".
type Account struct {
	Dataset, Identity string
}

// Validate reports whether a names an account.
func (a Account) Validate() error {
	if err := checkName("dataset", a.Dataset); err != nil {
		return err
	}
	return checkName("identity", a.Identity)
}

// Limits are the budgets a Ledger enforces, for each neighbour relation
// separately (the same values for every relation). A charge must fit both, in
// every relation it counts towards (Relation.CountsTowards): the identity's
// total plus the cost must stay within PerIdentity, and the dataset's total
// over all identities plus the cost must stay within Dataset. Patient caps
// the whole-patient totals, across all relations (see PatientLimits).
type Limits struct {
	PerIdentity, Dataset Cost
	Patient              PatientLimits
}

// PatientLimits cap the whole-patient (record-level) totals: the sums, over
// every relation, of the charges' PatientCost (see the package
// documentation). A scope whose ε is 0 has no cap; the zero value caps
// nothing. A charge must fit every cap in force: the identity's whole-patient
// total plus the charge's within PerIdentity, the dataset's within Dataset;
// a charge with no finite whole-patient figure (PatientCost.Unbounded) fits
// no cap.
type PatientLimits struct {
	PerIdentity, Dataset Cost
}

// Enabled reports whether any whole-patient cap is set.
func (p PatientLimits) Enabled() bool { return p.PerIdentity.Epsilon > 0 || p.Dataset.Epsilon > 0 }

// Validate reports whether both limits have a finite ε > 0 and a finite δ
// with 0 ≤ δ < 1, and each whole-patient cap is either off (ε and δ 0) or
// such a limit.
func (l Limits) Validate() error {
	check := func(name string, c Cost) error {
		switch e, d := c.Epsilon, c.Delta; {
		case math.IsNaN(e) || math.IsInf(e, 0) || e <= 0:
			return fmt.Errorf("ledger: %s limit epsilon must be finite and positive, got %g", name, e)
		case math.IsNaN(d) || math.IsInf(d, 0) || d < 0 || d >= 1:
			return fmt.Errorf("ledger: %s limit delta must be in [0, 1), got %g", name, d)
		}
		return nil
	}
	for _, s := range []struct {
		name string
		c    Cost
	}{{"per-identity", l.PerIdentity}, {"dataset", l.Dataset}} {
		if err := check(s.name, s.c); err != nil {
			return err
		}
	}
	for _, s := range []struct {
		name string
		c    Cost
	}{{"whole-patient per-identity", l.Patient.PerIdentity}, {"whole-patient dataset", l.Patient.Dataset}} {
		if s.c == (Cost{}) {
			continue
		}
		if s.c.Epsilon == 0 {
			return fmt.Errorf("ledger: %s cap has δ=%g but no ε: give its ε, or leave both 0 for no cap", s.name, s.c.Delta)
		}
		if err := check(s.name, s.c); err != nil {
			return err
		}
	}
	return nil
}

// Charge is a request to record a release against an account.
type Charge struct {
	Account
	// Key identifies the release within the account (for example a hash of
	// the request). Charging the same key again replays the stored receipt
	// and spends nothing.
	Key string
	// Kind names the mechanism ("projection", "query", "kusner", ...). A
	// replay must name the same kind, relation and cost as the stored record.
	Kind string
	// Relation is the neighbour relation Cost is stated for (required). The
	// charge is added to this relation's totals and counts towards every
	// relation it implies (see the package documentation).
	Relation Relation
	// Description is free text for the operator; it is not compared on replay.
	Description string
	Cost        Cost
	// Patient is the charge's whole-patient (record-level) cost: what the release
	// costs a patient whose record is replaced by any other. Nil takes
	// DefaultPatientCost(Relation, Cost), which is right for releases stated
	// under RelationRecord and conservative otherwise. A replay returns the
	// stored one; it is not compared.
	Patient *PatientCost
	// Result is the released payload, if already known. It can be attached
	// or replaced later with SetResult. A replay ignores it and returns the
	// stored payload.
	Result []byte
	// Stored is how many bytes the release keeps for replay beyond its record (a
	// projection's matrix in the release store): counted by the stored-bytes
	// quotas (StoredQuota) when reserved. A replay does not compare it.
	Stored int64
}

// Receipt is a stored record.
type Receipt struct {
	Account
	Key, Kind, Description string
	// Relation is the neighbour relation Cost is stated for.
	Relation Relation
	Cost     Cost
	// Patient is the stored whole-patient cost.
	Patient PatientCost
	// Result is the stored payload (nil if none yet). Entries leaves it nil
	// to keep listings small; use Get for the payload.
	Result []byte
	// ResultSize is the length of the stored payload in bytes, also set by
	// Entries.
	ResultSize int
	// Created is when the record was committed, by the clock of the process
	// that committed it.
	Created time.Time
	// Replayed is true when Charge found the key already recorded and spent
	// nothing.
	Replayed bool
}

// Balance is the state of an account and of its dataset under one neighbour
// relation, as a charge under Relation is checked against it. The totals are
// effective: they include every record whose relation implies Relation (for
// RelationFeatureUnit, the RelationRecord records too). Spent values are the
// committed totals and Reserved values what the live reservations hold
// (releases being computed, Ledger.Reserve), both rounded to the nearest
// float64; Remaining values are max(0, limit − spent − reserved), exact, then
// rounded toward zero, so that a charge of exactly the reported remainder fits
// unless others spend or reserve meanwhile. A reservation moves to Spent when
// committed, and back into Remaining when cancelled, dropped or expired.
type Balance struct {
	Account
	Relation                                        Relation
	Spent, Reserved, Remaining                      Cost
	DatasetSpent, DatasetReserved, DatasetRemaining Cost
	// Charges is the number of records of the account that count towards
	// Relation's totals (replays excluded); Reservations the number of its
	// reserved charges that do.
	Charges, Reservations int
	Limits                Limits
}

// Available is what a charge under b.Relation can still spend: the smaller of
// the identity's and the dataset's remainders, since a charge must fit both.
func (b Balance) Available() Cost {
	return Cost{Epsilon: min(b.Remaining.Epsilon, b.DatasetRemaining.Epsilon),
		Delta: min(b.Remaining.Delta, b.DatasetRemaining.Delta)}
}

// DatasetBalance is the state of a dataset, over all its identities, under
// one neighbour relation: the effective totals (as in Balance) that bound
// every charge under Relation by Limits.Dataset.
type DatasetBalance struct {
	Dataset  string
	Relation Relation
	// Spent is the effective committed total and Reserved what the live
	// reservations hold, each rounded to the nearest float64; Remaining is
	// max(0, Limits.Dataset − spent − reserved) rounded toward zero.
	Spent, Reserved, Remaining Cost
	// Charges is the number of records of the dataset that count towards
	// Relation's totals, Reservations the number of reserved charges.
	Charges, Reservations int
	Limits                Limits
}

var (
	// ErrLimitsDiffer is matched (errors.Is) by every *LimitsDifferError.
	ErrLimitsDiffer = errors.New("ledger: limits differ from the limits in force")
	// ErrBudgetExceeded is matched (errors.Is) by every *BudgetError.
	ErrBudgetExceeded = errors.New("ledger: budget exceeded")
	// ErrKeyConflict is returned when a key is charged again with a
	// different kind, relation or cost.
	ErrKeyConflict = errors.New("ledger: key already charged with a different kind, relation or cost")
	// ErrNotFound is returned by SetResult for a record that does not exist.
	ErrNotFound = errors.New("ledger: no such record")
	// ErrUnavailable is matched (errors.Is) by errors that mean the database
	// could not be reached or dropped the connection: nothing is known to be
	// wrong with the request, and retrying it later is safe (charges are
	// idempotent by key).
	ErrUnavailable = errors.New("ledger: database unavailable")
)

// Scopes of a BudgetError.
const (
	ScopeIdentity = "identity"
	ScopeDataset  = "dataset"
)

// BudgetError reports a charge refused because it does not fit a limit.
// When both limits would be exceeded the identity scope is reported, and
// among the relations the charge counts towards, its own relation first.
type BudgetError struct {
	Scope   string // ScopeIdentity or ScopeDataset
	Account Account
	// Relation is the neighbour relation whose budget is spent: the charge's
	// own relation or one it counts towards (a RelationRecord charge can be
	// refused by the RelationFeatureUnit budget).
	Relation  Relation
	Requested Cost
	// Remaining is what is left in the scope under Relation, as in Balance.
	Remaining Cost
	// Limit is the scope's limit, when the refusing code knew it (zero
	// otherwise). With it, a refusal because the limit's δ is zero says so
	// instead of reading like a spent budget (ZeroDeltaLimit).
	Limit Cost
	// WholePatient is set when the refusing budget is the scope's whole-patient
	// cap (PatientLimits): Requested and Remaining are then whole-patient
	// (record-level) figures, summed over every relation, and Relation is
	// RelationRecord, the relation such figures are stated for.
	WholePatient bool
	// Unbounded is set, with WholePatient, when the charge has no finite
	// whole-patient figure (PatientCost.Unbounded), so no cap can admit it.
	Unbounded bool
	// Reserved is the part of the scope's budget, under Relation (or
	// whole-patient), held by live reservations of releases being computed
	// (Ledger.Reserve): Remaining is what is left after them. It comes back if
	// they are cancelled or expire.
	Reserved Cost
	// Stale, when Reserved counts reservations whose holder's heartbeat is late
	// (Ledger.Heartbeat), names the one late the longest; nil otherwise.
	Stale *StaleOwner
}

// reservedClause says, for a refusal, what releases in progress hold.
func (e *BudgetError) reservedClause() string {
	if e.Reserved.IsZero() {
		return ""
	}
	return fmt.Sprintf(" (after ε=%g, δ=%g reserved by releases being computed%s)", e.Reserved.Epsilon, e.Reserved.Delta, e.Stale.staleClause())
}

// ZeroDeltaLimit reports whether the charge was refused because it needs δ > 0
// and the scope's δ limit is zero: no such release can ever be made, whatever
// has been spent. It is false when Limit is unknown.
func (e *BudgetError) ZeroDeltaLimit() bool {
	return e.Limit.Epsilon > 0 && e.Limit.Delta == 0 && e.Requested.Delta > 0
}

func (e *BudgetError) Error() string {
	var who string
	if e.Scope == ScopeIdentity {
		who = fmt.Sprintf("identity %q on dataset %q", e.Account.Identity, e.Account.Dataset)
	} else {
		who = fmt.Sprintf("dataset %q (charge by identity %q)", e.Account.Dataset, e.Account.Identity)
	}
	if e.WholePatient {
		if e.Unbounded {
			return fmt.Sprintf("ledger: refused for %s: the release has no finite whole-patient guarantee (what replacing one patient's record "+
				"by any other can reveal is not bounded), and the curator caps what a whole patient can lose", who)
		}
		if e.ZeroDeltaLimit() {
			return fmt.Sprintf("ledger: refused for %s: the release needs a whole-patient δ=%g but the curator's whole-patient cap allows δ=0 "+
				"(pure ε-DP releases only); this is not a spent budget", who, e.Requested.Delta)
		}
		return fmt.Sprintf("ledger: whole-patient budget exceeded for %s (every relation's releases converted to the record relation): "+
			"requested ε=%g, δ=%g; remaining ε=%g, δ=%g%s", who, e.Requested.Epsilon, e.Requested.Delta, e.Remaining.Epsilon, e.Remaining.Delta,
			e.reservedClause())
	}
	rel := "an unnamed neighbour relation"
	if e.Relation != "" {
		rel = fmt.Sprintf("the %s neighbour relation", e.Relation)
	}
	if e.ZeroDeltaLimit() {
		// The text reaches remote modelers: it names the budget, not the curator's
		// settings, which its operator knows by their names.
		limit := "per-identity δ budget"
		if e.Scope == ScopeDataset {
			limit = "dataset δ cap"
		}
		return fmt.Sprintf("ledger: refused for %s under %s: the release needs δ=%g but the curator's %s is 0, "+
			"so no release that needs δ > 0 (the Gaussian mechanism) can ever be made; this is not a spent budget: "+
			"the curator's operator must configure a δ budget above 0", who, rel, e.Requested.Delta, limit)
	}
	return fmt.Sprintf("ledger: budget exceeded for %s under %s: requested ε=%g, δ=%g; remaining ε=%g, δ=%g%s",
		who, rel, e.Requested.Epsilon, e.Requested.Delta, e.Remaining.Epsilon, e.Remaining.Delta, e.reservedClause())
}

// Is makes errors.Is(err, ErrBudgetExceeded) true.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExceeded }

// Bounds on the text fields. PostgreSQL text cannot hold NUL bytes or
// invalid UTF-8, so both stores refuse them alike.
const (
	maxNameLen        = 512
	maxDescriptionLen = 4096
)

func checkName(field, s string) error {
	if s == "" {
		return fmt.Errorf("ledger: %s must not be empty", field)
	}
	if len(s) > maxNameLen {
		return fmt.Errorf("ledger: %s must be at most %d bytes, got %d", field, maxNameLen, len(s))
	}
	return checkText(field, s)
}

func checkText(field, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("ledger: %s must be valid UTF-8", field)
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return fmt.Errorf("ledger: %s must not contain NUL bytes", field)
		}
	}
	return nil
}

// Validate reports whether c is a well-formed charge.
func (c Charge) Validate() error {
	if err := c.Account.Validate(); err != nil {
		return err
	}
	if err := checkName("key", c.Key); err != nil {
		return err
	}
	if err := checkName("kind", c.Kind); err != nil {
		return err
	}
	if err := c.Relation.Validate(); err != nil {
		return err
	}
	if len(c.Description) > maxDescriptionLen {
		return fmt.Errorf("ledger: description must be at most %d bytes, got %d", maxDescriptionLen, len(c.Description))
	}
	if err := checkText("description", c.Description); err != nil {
		return err
	}
	if c.Patient != nil {
		if err := c.Patient.Validate(); err != nil {
			return err
		}
	}
	if c.Stored < 0 {
		return fmt.Errorf("ledger: stored bytes must not be negative, got %d", c.Stored)
	}
	return c.Cost.Validate()
}
