package ledger

import (
	"context"
	"fmt"
	"math/big"
	"sort"
	"strings"
)

// counted is an exact total and the number of records it sums.
type counted struct {
	t total
	n int64
}

// datasetTotals are stored totals of one dataset, all of them or those of some
// identities: per identity and relation, the exact sum of the records charged
// under that relation alone; the same per relation for the dataset (over all its
// identities); and the whole-patient totals of the identities and of the dataset.
// The effective totals a limit is checked against add the relations that imply
// the one checked (Relation.Implies).
type datasetTotals struct {
	identities []string // those read that have any record, sorted
	raw        map[string]map[Relation]*counted
	ds         map[Relation]*counted
	patient    map[string]*PatientTotal
	dsPatient  PatientTotal
	stored     map[string]int64 // reservations' Charge.Stored, by identity and datasetRow
}

func newDatasetTotals() *datasetTotals {
	return &datasetTotals{raw: make(map[string]map[Relation]*counted), ds: make(map[Relation]*counted),
		patient: make(map[string]*PatientTotal), dsPatient: newPatientTotal(), stored: make(map[string]int64)}
}

// own returns the stored sum of who (an identity, or datasetRow) under r
// alone, created empty if there is none, for updating in place.
func (d *datasetTotals) own(who string, r Relation) *counted {
	m := d.ds
	if who != datasetRow {
		if d.raw[who] == nil {
			d.raw[who] = make(map[Relation]*counted)
		}
		m = d.raw[who]
	}
	c := m[r]
	if c == nil {
		c = new(counted)
		m[r] = c
	}
	return c
}

// add adds a record (or a reservation) of identity under r, of cost c and
// whole-patient cost p, to the identity's totals and to the dataset's.
func (d *datasetTotals) add(identity string, r Relation, c Cost, p PatientCost) {
	for _, who := range []string{identity, datasetRow} {
		t := d.own(who, r)
		t.t.add(c)
		t.n++
		d.patientRef(who).add(p)
	}
}

// sortIdentities sets d.identities to the identities d holds a total of, sorted.
func (d *datasetTotals) sortIdentities() {
	d.identities = d.identities[:0]
	for id := range d.raw {
		d.identities = append(d.identities, id)
	}
	for id := range d.patient {
		if d.raw[id] == nil {
			d.identities = append(d.identities, id)
		}
	}
	sort.Strings(d.identities)
}

// patientOf returns identity's whole-patient total (zero if it has none).
func (d *datasetTotals) patientOf(identity string) PatientTotal {
	if p := d.patient[identity]; p != nil {
		return *p
	}
	return newPatientTotal()
}

// patientRef returns the whole-patient total of who (an identity, or
// datasetRow) for updating in place.
func (d *datasetTotals) patientRef(who string) *PatientTotal {
	if who == datasetRow {
		return &d.dsPatient
	}
	p := d.patient[who]
	if p == nil {
		t := newPatientTotal()
		p = &t
		d.patient[who] = p
	}
	return p
}

// effective returns the total of identity's records whose relation implies
// s, and their number.
func (d *datasetTotals) effective(identity string, s Relation) (*total, int64) {
	return sumImplying(d.raw[identity], s)
}

// datasetEffective returns the total, over all identities, of the records
// whose relation implies s, and their number.
func (d *datasetTotals) datasetEffective(s Relation) (*total, int64) {
	return sumImplying(d.ds, s)
}

// effectiveOf is effective(who, s) for an identity, datasetEffective(s) for
// datasetRow, without the number of records.
func (d *datasetTotals) effectiveOf(who string, s Relation) *total {
	if who == datasetRow {
		t, _ := d.datasetEffective(s)
		return t
	}
	t, _ := d.effective(who, s)
	return t
}

func sumImplying(m map[Relation]*counted, s Relation) (*total, int64) {
	t := new(total)
	var n int64
	for r, c := range m {
		if r.Implies(s) {
			t.addTotal(&c.t)
			n += c.n
		}
	}
	return t, n
}

// totalsOf reads the stored totals of some identities of a dataset, and the
// dataset's own: a constant number of rows whatever the dataset's other
// identities.
func (s *Ledger) totalsOf(ctx context.Context, q Querier, dataset string, identities []string) (*datasetTotals, error) {
	who := append([]string{datasetRow}, identities...)
	args := make([]any, 0, len(who)+1)
	args = append(args, dataset)
	for _, w := range who {
		args = append(args, w)
	}
	in := strings.TrimSuffix(strings.Repeat("?, ", len(who)), ", ")
	return s.readTotalRows(ctx, q,
		s.d.SQL(`SELECT identity, relation, epsilon, delta, charges FROM {t}totals WHERE dataset = ? AND identity IN (`+in+`)`),
		s.d.SQL(`SELECT identity, epsilon, delta, rho, rho_delta, unbounded, charges FROM {t}patient_totals WHERE dataset = ? AND identity IN (`+in+`)`),
		args)
}

// totals reads every stored total of a dataset.
func (s *Ledger) totals(ctx context.Context, q Querier, dataset string) (*datasetTotals, error) {
	return s.readTotalRows(ctx, q, s.qTotalsAll, s.qPatientAll, []any{dataset})
}

func (s *Ledger) readTotalRows(ctx context.Context, q Querier, qTotals, qPatient string, args []any) (*datasetTotals, error) {
	d := newDatasetTotals()
	if err := readRelationTotals(ctx, q, qTotals, args, d); err != nil {
		return nil, err
	}
	if err := readPatientTotals(ctx, q, qPatient, args, d); err != nil {
		return nil, err
	}
	d.sortIdentities()
	return d, nil
}

// readRelationTotals reads the per-relation totals of the query qTotals into d.
func readRelationTotals(ctx context.Context, q Querier, qTotals string, args []any, d *datasetTotals) error {
	err := EachRow(ctx, q, qTotals, args, func(scan func(...any) error) error {
		var identity, e, dl string
		var r Relation
		c := new(counted)
		if err := scan(&identity, &r, &e, &dl, &c.n); err != nil {
			return err
		}
		if err := checkStoredRelation(r); err != nil {
			return err
		}
		er, err := decodeRat(e)
		if err != nil {
			return err
		}
		dr, err := decodeRat(dl)
		if err != nil {
			return err
		}
		if c.n < 0 {
			return fmt.Errorf("ledger: corrupt stored number of charges %d", c.n)
		}
		c.t.eps.Set(er)
		c.t.delta.Set(dr)
		if identity == datasetRow {
			d.ds[r] = c
			return nil
		}
		m := d.raw[identity]
		if m == nil {
			m = make(map[Relation]*counted)
			d.raw[identity] = m
		}
		m[r] = c
		return nil
	})
	if err != nil {
		return wrap("read totals", err) // the decoding errors say what is corrupt
	}
	return nil
}

// readPatientTotals reads the whole-patient totals of the query qPatient into d.
func readPatientTotals(ctx context.Context, q Querier, qPatient string, args []any, d *datasetTotals) error {
	err := EachRow(ctx, q, qPatient, args, func(scan func(...any) error) error {
		var identity string
		var txt [4]string
		p := newPatientTotal()
		if err := scan(&identity, &txt[0], &txt[1], &txt[2], &txt[3], &p.Unbounded, &p.Charges); err != nil {
			return err
		}
		for i, dst := range []*big.Rat{p.Epsilon, p.Delta, p.Rho, p.RhoDelta} {
			r, err := decodeRat(txt[i])
			if err != nil {
				return err
			}
			dst.Set(r)
		}
		if p.Unbounded < 0 || p.Charges < 0 || p.Unbounded > p.Charges {
			return fmt.Errorf("ledger: corrupt stored whole-patient counts %d of %d", p.Unbounded, p.Charges)
		}
		if identity == datasetRow {
			d.dsPatient = p
		} else {
			d.patient[identity] = &p
		}
		return nil
	})
	if err != nil {
		return wrap("read whole-patient totals", err)
	}
	return nil
}
