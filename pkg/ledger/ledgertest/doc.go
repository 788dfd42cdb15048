// Package ledgertest is the conformance suite of the privacy ledger's stores
// (package ledger): every engine's tests run the same behaviour through Run,
// so that SQLite (ledger.OpenSQLite) and PostgreSQL (package pgledger) cannot
// drift apart. It also holds the fixtures of the schema upgrades (FillV1 and
// CheckUpgradedV1, FillV3 and CheckUpgradedV3), which each engine's test
// writes in its own version 1 or 2 tables, and the charge benchmark.
//
// Only tests import it.
package ledgertest
