package ledger

import "strings"

// ColumnTypes are how an engine spells the column types of the ledger's tables:
// Serial is an auto-numbered primary key, Real a float64, Int an int64, Blob bytes.
type ColumnTypes struct {
	Serial, Real, Int, Blob string
}

func (ty ColumnTypes) sql(q string) string {
	return strings.NewReplacer("{serial}", ty.Serial, "{real}", ty.Real, "{int}", ty.Int, "{blob}", ty.Blob).Replace(q)
}

// v4Columns are the columns version 4 adds to the entries table.
func (ty ColumnTypes) v4Columns() []string {
	return []string{
		ty.sql("patient_epsilon {real} NOT NULL DEFAULT 0"),
		ty.sql("patient_delta {real} NOT NULL DEFAULT 0"),
		ty.sql("patient_rho {real} NOT NULL DEFAULT 0"),
		ty.sql("patient_unbounded {int} NOT NULL DEFAULT 0"),
	}
}

// storedColumn is the column version 6 adds to the entries and reservations
// tables: Charge.Stored.
const storedColumn = "stored_bytes {int} NOT NULL DEFAULT 0"

// entries is the entries table, named name (with the table prefix {t}): of schema
// version 2, or of the current version with v4.
func (ty ColumnTypes) entries(name string, v4 bool) string {
	cols := ""
	if v4 {
		cols = strings.Join(append(ty.v4Columns(), ty.sql(storedColumn)), ",\n\t\t") + ",\n\t\t"
	}
	return ty.sql(`CREATE TABLE IF NOT EXISTS {t}` + name + ` (
		seq {serial},
		dataset TEXT NOT NULL,
		identity TEXT NOT NULL,
		entry_key TEXT NOT NULL,
		kind TEXT NOT NULL,
		description TEXT NOT NULL,
		epsilon {real} NOT NULL CHECK (epsilon >= 0),
		delta {real} NOT NULL CHECK (delta >= 0 AND delta < 1),
		result {blob},
		created_ns {int} NOT NULL,
		relation TEXT NOT NULL,
		` + cols + `UNIQUE (dataset, identity, entry_key))`)
}

// Tables are the tables and indexes of the current schema version, for
// SchemaDDL.Tables.
func (ty ColumnTypes) Tables() []string {
	return []string{
		ty.entries("entries", true),
		`CREATE INDEX IF NOT EXISTS entries_dataset_seq ON {t}entries (dataset, seq)`,
		ty.sql(`CREATE TABLE IF NOT EXISTS {t}totals (
		dataset TEXT NOT NULL,
		identity TEXT NOT NULL,
		relation TEXT NOT NULL,
		epsilon TEXT NOT NULL,
		delta TEXT NOT NULL,
		charges {int} NOT NULL,
		PRIMARY KEY (dataset, identity, relation))`),
		ty.sql(`CREATE TABLE IF NOT EXISTS {t}patient_totals (
		dataset TEXT NOT NULL,
		identity TEXT NOT NULL,
		epsilon TEXT NOT NULL,
		delta TEXT NOT NULL,
		rho TEXT NOT NULL,
		rho_delta TEXT NOT NULL,
		unbounded {int} NOT NULL,
		charges {int} NOT NULL,
		PRIMARY KEY (dataset, identity))`),
		ty.sql(`CREATE TABLE IF NOT EXISTS {t}limits_history (
		id {serial},
		dataset TEXT NOT NULL,
		identity_epsilon {real} NOT NULL,
		identity_delta {real} NOT NULL,
		dataset_epsilon {real} NOT NULL,
		dataset_delta {real} NOT NULL,
		patient_identity_epsilon {real} NOT NULL,
		patient_identity_delta {real} NOT NULL,
		patient_dataset_epsilon {real} NOT NULL,
		patient_dataset_delta {real} NOT NULL,
		recorded_ns {int} NOT NULL,
		confirmed_ns {int} NOT NULL,
		starts {int} NOT NULL)`),
		`CREATE INDEX IF NOT EXISTS limits_history_dataset ON {t}limits_history (dataset, id)`,
		ty.sql(`CREATE TABLE IF NOT EXISTS {t}reservations (
		dataset TEXT NOT NULL,
		identity TEXT NOT NULL,
		entry_key TEXT NOT NULL,
		token TEXT NOT NULL,
		owner TEXT NOT NULL,
		kind TEXT NOT NULL,
		relation TEXT NOT NULL,
		epsilon {real} NOT NULL,
		delta {real} NOT NULL,
		patient_epsilon {real} NOT NULL,
		patient_delta {real} NOT NULL,
		patient_rho {real} NOT NULL,
		patient_unbounded {int} NOT NULL,
		created_ns {int} NOT NULL,
		expires_ns {int} NOT NULL,
		` + storedColumn + `,
		PRIMARY KEY (dataset, identity, entry_key))`),
		`CREATE INDEX IF NOT EXISTS reservations_token ON {t}reservations (dataset, token)`,
		ty.sql(`CREATE TABLE IF NOT EXISTS {t}stored_totals (
		dataset TEXT NOT NULL,
		identity TEXT NOT NULL,
		bytes {int} NOT NULL,
		releases {int} NOT NULL,
		PRIMARY KEY (dataset, identity))`),
		// Each reservation owner's heartbeat (liveness.go); added to older
		// databases when they are opened: older programs ignore it.
		ty.sql(`CREATE TABLE IF NOT EXISTS {t}owners (
		dataset TEXT NOT NULL,
		owner TEXT NOT NULL,
		seen_ns {int} NOT NULL,
		alive_until_ns {int} NOT NULL,
		PRIMARY KEY (dataset, owner))`),
	}
}

// toV6 adds version 6's column to the tables of a version v database that lack
// it: the entries table, and the reservations table of version 5 (BIGINT has
// SQLite's integer affinity).
func toV6(v int64) []string {
	col := strings.ReplaceAll(storedColumn, "{int}", "BIGINT")
	out := []string{`ALTER TABLE {t}entries ADD COLUMN ` + col}
	if v == 5 {
		out = append(out, `ALTER TABLE {t}reservations ADD COLUMN `+col)
	}
	return out
}
