package ledgertest

import (
	"errors"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/ledger/pgledger"
)

// TestPostgresUpgradeV5: a version 5 ledger (no stored bytes) with a live reservation
// is upgraded in place: the reservation still holds its budget, the records count as
// storing nothing, and the stored-bytes quota applies from then on.
func TestPostgresUpgradeV5(t *testing.T) {
	conn := requirePostgres(t)
	schema := randomSchema(t, conn)
	open := func() *ledger.Ledger {
		s, err := pgledger.Open(ctx, testDSN(), pgledger.Options{Schema: schema, CallTimeout: testCallTimeout}, StdLimits)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	}
	s := open()
	acct := ledger.Account{Dataset: "d", Identity: "acme"}
	MustCharge(t, s, ledger.Charge{Account: acct, Key: "k1", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.25}})
	MustReserve(t, s, ledger.Hold{TTL: time.Hour}, ledger.Charge{Account: acct, Key: "k2", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.5}})
	s.Close()
	q := `"` + schema + `".`
	for _, stmt := range []string{`DROP TABLE ` + q + `stored_totals`, `ALTER TABLE ` + q + `entries DROP COLUMN stored_bytes`,
		`ALTER TABLE ` + q + `reservations DROP COLUMN stored_bytes`, `UPDATE ` + q + `schema_version SET version = 5`} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	s = open()
	defer s.Close()
	if b := MustBalance(t, s, acct, ledger.RelationRecord); b.Charges != 1 || b.Spent.Epsilon != 0.25 || b.Reserved.Epsilon != 0.5 {
		t.Errorf("after the upgrade: %d charges, spent %+v, reserved %+v; want the record and the reservation kept", b.Charges, b.Spent, b.Reserved)
	}
	quota := ledger.Hold{Stored: ledger.StoredQuota{PerIdentity: 100}}
	MustReserve(t, s, quota, ledger.Charge{Account: acct, Key: "k3", Kind: "projection", Relation: ledger.RelationRecord, Stored: 100})
	if _, err := s.Reserve(ctx, []ledger.Charge{{Account: acct, Key: "k4", Kind: "projection", Relation: ledger.RelationRecord, Stored: 1}}, quota); !errors.Is(err, ledger.ErrStoredBytes) {
		t.Errorf("Reserve past the stored-bytes quota after the upgrade: %v, want ErrStoredBytes", err)
	}
}
