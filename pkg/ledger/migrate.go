package ledger

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Statements of the upgrades common to both engines.
const (
	qV1Kinds       = `SELECT DISTINCT kind FROM {t}entries ORDER BY kind`
	qV1SetRelation = `UPDATE {t}entries SET relation = ? WHERE kind = ?`
	qV3Limits      = `INSERT INTO {t}limits_history (dataset, identity_epsilon, identity_delta, dataset_epsilon, dataset_delta,
		patient_identity_epsilon, patient_identity_delta, patient_dataset_epsilon, patient_dataset_delta, recorded_ns, confirmed_ns, starts)
		SELECT dataset, identity_epsilon, identity_delta, dataset_epsilon, dataset_delta, 0, 0, 0, 0, recorded_ns, recorded_ns, 1
		FROM {t}limits ORDER BY recorded_ns`
	qV3DropLimits   = `DROP TABLE {t}limits`
	qV4Entries      = `SELECT seq, kind, relation, description, epsilon, delta FROM {t}entries ORDER BY seq`
	qV4SetPatient   = `UPDATE {t}entries SET patient_epsilon = ?, patient_delta = ?, patient_rho = ?, patient_unbounded = ? WHERE seq = ?`
	qClearTotals    = `DELETE FROM {t}totals`
	qClearPatient   = `DELETE FROM {t}patient_totals`
	qInsertTotal    = `INSERT INTO {t}totals (dataset, identity, relation, epsilon, delta, charges) VALUES (?, ?, ?, ?, ?, ?)`
	qInsertPatient  = `INSERT INTO {t}patient_totals (dataset, identity, epsilon, delta, rho, rho_delta, unbounded, charges) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	qRecordsAll     = `SELECT dataset, identity, relation, epsilon, delta, patient_epsilon, patient_delta, patient_rho, patient_unbounded FROM {t}entries ORDER BY seq`
	qRecordsDataset = `SELECT dataset, identity, relation, epsilon, delta, patient_epsilon, patient_delta, patient_rho, patient_unbounded FROM {t}entries WHERE dataset = ? ORDER BY seq`
)

// migrate creates the tables if needed, upgrades an older schema version and
// checks the version, in one transaction: a failed upgrade leaves the
// database as it was.
func (s *Ledger) migrate(ctx context.Context, ddl SchemaDDL) error {
	run := func(q Querier, stmts []string) error {
		for _, stmt := range stmts {
			if _, err := q.Exec(ctx, s.d.SQL(stmt)); err != nil {
				return err
			}
		}
		return nil
	}
	err := s.e.Write(ctx, Lock{Migrate: true}, func(q Querier) error {
		if err := run(q, ddl.Base); err != nil {
			return err
		}
		var v int64
		found, err := QueryRow(ctx, q, s.d.SQL(`SELECT version FROM {t}schema_version WHERE id = 1`), nil, &v)
		switch {
		case err != nil:
			return err
		case !found:
			if err := run(q, ddl.Tables); err != nil {
				return err
			}
			_, err := q.Exec(ctx, s.d.SQL(`INSERT INTO {t}schema_version (id, version) VALUES (1, ?)`), int64(SchemaVersion))
			return err
		case v > SchemaVersion:
			return fmt.Errorf("database schema version %d is newer than this program supports (%d)", v, SchemaVersion)
		case v < 1:
			return fmt.Errorf("database schema version %d is invalid", v)
		case v < SchemaVersion:
			if err := s.upgrade(ctx, q, ddl, run, v); err != nil {
				return fmt.Errorf("upgrade from schema version %d: %w", v, err)
			}
			_, err := q.Exec(ctx, s.d.SQL(`UPDATE {t}schema_version SET version = ? WHERE id = 1`), int64(SchemaVersion))
			return err
		}
		return run(q, ddl.Tables)
	})
	if err != nil {
		return fmt.Errorf("ledger: migrate: %w", err)
	}
	return nil
}

// upgrade turns a database of version v < SchemaVersion into the current one
// within the migrating transaction:
//
//   - from version 5, the stored-bytes column is added to the records and the
//     reservations, and the stored-bytes totals are created, all zero: releases
//     recorded before count as storing nothing;
//   - from version 4, the reservations table is created (empty);
//   - from version 1, each record is given the relation its kind is stated for
//     (relationOfV1Kind);
//   - from versions 1–3, each record is given its whole-patient cost from what it
//     states (migratedPatientCost), version 3's limits become the first entry of
//     the limits history, and every total — per identity and relation, per
//     relation for the dataset, and the whole-patient ones — is recomputed exactly
//     from the records.
//
// The records themselves (keys, costs, results, order) are kept as they are.
func (s *Ledger) upgrade(ctx context.Context, q Querier, ddl SchemaDDL, run func(Querier, []string) error, v int64) error {
	if v >= 4 {
		// Version 5 only adds the reservations table, which starts empty; version 6
		// the stored-bytes column and totals, which start at zero.
		if err := run(q, toV6(v)); err != nil {
			return err
		}
		return run(q, ddl.Tables)
	}
	if v == 1 {
		if err := run(q, ddl.FromV1); err != nil {
			return err
		}
		if err := s.setV1Relations(ctx, q); err != nil {
			return err
		}
		if err := run(q, ddl.FromV1Done); err != nil {
			return err
		}
	}
	if err := run(q, append(slices.Clone(ddl.ToV4), toV6(v)...)); err != nil {
		return err
	}
	if err := run(q, ddl.Tables); err != nil {
		return err
	}
	if v == 3 {
		if err := run(q, []string{qV3Limits, qV3DropLimits}); err != nil {
			return err
		}
	}
	if err := s.setPatientCosts(ctx, q); err != nil {
		return err
	}
	return s.rebuildTotals(ctx, q)
}

// setV1Relations gives each record of a version 1 database the relation of its
// kind.
func (s *Ledger) setV1Relations(ctx context.Context, q Querier) error {
	var kinds []string
	err := EachRow(ctx, q, s.d.SQL(qV1Kinds), nil, func(scan func(...any) error) error {
		var k string
		err := scan(&k)
		kinds = append(kinds, k)
		return err
	})
	if err != nil {
		return err
	}
	for _, k := range kinds {
		if _, err := q.Exec(ctx, s.d.SQL(qV1SetRelation), string(relationOfV1Kind(k)), k); err != nil {
			return err
		}
	}
	return nil
}

// setPatientCosts gives every record its whole-patient cost from what it states
// (migratedPatientCost).
func (s *Ledger) setPatientCosts(ctx context.Context, q Querier) error {
	type rec struct {
		seq int64
		p   PatientCost
	}
	var recs []rec
	err := EachRow(ctx, q, s.d.SQL(qV4Entries), nil, func(scan func(...any) error) error {
		var r rec
		var kind, description string
		var rel Relation
		var c Cost
		if err := scan(&r.seq, &kind, &rel, &description, &c.Epsilon, &c.Delta); err != nil {
			return err
		}
		if err := checkStoredCost(c); err != nil {
			return err
		}
		r.p = migratedPatientCost(kind, rel, c, description)
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range recs {
		if _, err := q.Exec(ctx, s.d.SQL(qV4SetPatient), r.p.Epsilon, r.p.Delta, r.p.Rho, boolInt(r.p.Unbounded), r.seq); err != nil {
			return err
		}
	}
	return nil
}

// recompute sums the records of one dataset (or of all, dataset ""), exactly,
// into the totals the charges keep.
func (s *Ledger) recompute(ctx context.Context, q Querier, dataset string) (map[string]*datasetTotals, error) {
	query, args := qRecordsAll, []any(nil)
	if dataset != "" {
		query, args = qRecordsDataset, []any{dataset}
	}
	out := make(map[string]*datasetTotals)
	err := EachRow(ctx, q, s.d.SQL(query), args, func(scan func(...any) error) error {
		var r Receipt
		var unbounded int64
		if err := scan(&r.Dataset, &r.Identity, &r.Relation, &r.Cost.Epsilon, &r.Cost.Delta,
			&r.Patient.Epsilon, &r.Patient.Delta, &r.Patient.Rho, &unbounded); err != nil {
			return err
		}
		r.Patient.Unbounded = unbounded != 0
		if err := checkStored(r); err != nil {
			return err
		}
		d := out[r.Dataset]
		if d == nil {
			d = newDatasetTotals()
			out[r.Dataset] = d
		}
		d.add(r.Identity, r.Relation, r.Cost, r.Patient)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, d := range out {
		d.sortIdentities()
	}
	return out, nil
}

// rebuildTotals replaces every stored total by the sums of the records.
func (s *Ledger) rebuildTotals(ctx context.Context, q Querier) error {
	all, err := s.recompute(ctx, q, "")
	if err != nil {
		return err
	}
	if _, err := q.Exec(ctx, s.d.SQL(qClearTotals)); err != nil {
		return err
	}
	if _, err := q.Exec(ctx, s.d.SQL(qClearPatient)); err != nil {
		return err
	}
	for _, ds := range slices.Sorted(maps.Keys(all)) {
		d := all[ds]
		for _, who := range append([]string{datasetRow}, d.identities...) {
			m := d.ds
			if who != datasetRow {
				m = d.raw[who]
			}
			for _, rel := range Relations {
				c := m[rel]
				if c == nil {
					continue
				}
				if _, err := q.Exec(ctx, s.d.SQL(qInsertTotal), ds, who, string(rel), encodeRat(&c.t.eps), encodeRat(&c.t.delta), c.n); err != nil {
					return err
				}
			}
			p := d.patientRef(who)
			if _, err := q.Exec(ctx, s.d.SQL(qInsertPatient), ds, who, encodeRat(p.Epsilon), encodeRat(p.Delta),
				encodeRat(p.Rho), encodeRat(p.RhoDelta), p.Unbounded, p.Charges); err != nil {
				return err
			}
		}
	}
	return nil
}

// Verify recomputes every total of dataset kept by the charges (per identity
// and relation, per relation for the dataset, the whole-patient ones and the
// stored bytes) from the records, exactly, and reports each that differs from
// the stored one. It
// also reads the live reservations, which are no totals (Report shows them),
// and fails if one is corrupt. It writes nothing.
func (s *Ledger) Verify(ctx context.Context, dataset string) ([]Inconsistency, error) {
	if err := checkName("dataset", dataset); err != nil {
		return nil, err
	}
	var out []Inconsistency
	err := s.e.Read(ctx, func(q Querier) error {
		// One consistent snapshot would need a transaction; the engines' reads are
		// autocommit, so Verify reads the totals, then the records, then the totals
		// again, and reports only when both readings of the totals agree.
		before, err := s.totals(ctx, q, dataset)
		if err != nil {
			return err
		}
		all, err := s.recompute(ctx, q, dataset)
		if err != nil {
			return err
		}
		after, err := s.totals(ctx, q, dataset)
		if err != nil {
			return err
		}
		if len(compareTotals(before, after)) > 0 {
			return fmt.Errorf("ledger: verify: dataset %q was charged while it was read; verify again", dataset)
		}
		// The live reservations are no totals, but every charge reads them: one
		// that cannot be read would refuse every charge on the dataset.
		if _, _, err := s.liveReservations(ctx, q, dataset, time.Now().UnixNano(), nil); err != nil {
			return err
		}
		want := all[dataset]
		if want == nil {
			want = newDatasetTotals()
		}
		out = compareTotals(after, want)
		stored, err := s.verifyStored(ctx, q, dataset)
		out = append(out, stored...)
		return err
	})
	if err != nil {
		return nil, wrap("verify", err)
	}
	return out, nil
}

// compareTotals lists where the stored totals got differ from want.
func compareTotals(got, want *datasetTotals) []Inconsistency {
	var out []Inconsistency
	text := func(c *counted) string {
		if c == nil {
			return "nothing"
		}
		return fmt.Sprintf("ε=%s δ=%s over %d records", c.t.eps.RatString(), c.t.delta.RatString(), c.n)
	}
	same := func(a, b *counted) bool {
		if a == nil || b == nil {
			return a == nil && b == nil
		}
		return a.n == b.n && a.t.eps.Cmp(&b.t.eps) == 0 && a.t.delta.Cmp(&b.t.delta) == 0
	}
	for _, who := range append([]string{datasetRow}, identitiesOf(got, want)...) {
		name := "dataset"
		gm, wm := got.ds, want.ds
		if who != datasetRow {
			name = "identity " + who
			gm, wm = got.raw[who], want.raw[who]
		}
		for _, rel := range Relations {
			if g, w := gm[rel], wm[rel]; !same(g, w) {
				out = append(out, Inconsistency{What: name + ", relation " + string(rel), Stored: text(g), Recomputed: text(w)})
			}
		}
		var gp, wp PatientTotal
		if who == datasetRow {
			gp, wp = got.dsPatient, want.dsPatient
		} else {
			gp, wp = got.patientOf(who), want.patientOf(who)
		}
		if !gp.equal(wp) {
			out = append(out, Inconsistency{What: "whole patient, " + name, Stored: patientText(gp), Recomputed: patientText(wp)})
		}
	}
	return out
}

func patientText(p PatientTotal) string {
	return fmt.Sprintf("ε=%s δ=%s ρ=%s (δ %s), %d unbounded of %d records", p.Epsilon.RatString(), p.Delta.RatString(),
		p.Rho.RatString(), p.RhoDelta.RatString(), p.Unbounded, p.Charges)
}
