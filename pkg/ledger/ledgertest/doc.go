// Package ledgertest holds the tests of the privacy ledger's two engines (package
// ledger's SQLite store and package pgledger's PostgreSQL store). Its conformance
// suite (Run) runs the same behaviour on both, so that they cannot drift apart;
// beside it are each engine's own tests, the fixtures of the schema upgrades, and
// the charge benchmarks. All of it is test code: only this file is compiled into
// a build, so that the package exists.
package ledgertest
