package ledger

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/privbo/privbo/pkg/sqlitedb"
)

// countingEngine counts the rows its queries return.
type countingEngine struct {
	Engine
	rows *int
}

func (e countingEngine) Write(ctx context.Context, lock Lock, fn func(q Querier) error) error {
	return e.Engine.Write(ctx, lock, func(q Querier) error { return fn(countingQuerier{q, e.rows}) })
}

func (e countingEngine) Read(ctx context.Context, fn func(q Querier) error) error {
	return e.Engine.Read(ctx, func(q Querier) error { return fn(countingQuerier{q, e.rows}) })
}

type countingQuerier struct {
	Querier
	rows *int
}

func (q countingQuerier) Query(ctx context.Context, sql string, args ...any) (Rows, error) {
	r, err := q.Querier.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return countingRows{r, q.rows}, nil
}

type countingRows struct {
	Rows
	n *int
}

func (r countingRows) Next() bool {
	ok := r.Rows.Next()
	if ok {
		*r.n++
	}
	return ok
}

// TestChargeReadsConstantRows: a charge reads the same number of rows whatever the
// number of other identities on its dataset (their totals are never read), here 10
// and 2,000; before schema version 4 it read every identity's totals.
func TestChargeReadsConstantRows(t *testing.T) {
	limits := Limits{PerIdentity: Cost{Epsilon: 1e9, Delta: 0.5}, Dataset: Cost{Epsilon: 1e9, Delta: 0.5}}
	read := map[int]int{}
	for _, n := range []int{10, 2000} {
		db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "ledger.db"))
		if err != nil {
			t.Fatal(err)
		}
		rows := new(int)
		s, err := OpenEngine(context.Background(), countingEngine{&sqliteEngine{db: db, sem: make(chan struct{}, 1)}, rows}, Dialect{}, sqliteDDL, limits)
		if err != nil {
			t.Fatal(err)
		}
		var fill []Charge
		for i := range n {
			for _, rel := range Relations {
				fill = append(fill, Charge{Account: Account{Dataset: "d", Identity: fmt.Sprint("other", i)}, Key: string(rel), Kind: "fill", Relation: rel,
					Cost: Cost{Epsilon: 1e-3}, Patient: &PatientCost{Epsilon: 1e-3}})
			}
		}
		for len(fill) > 0 {
			k := min(len(fill), 400)
			if _, err := s.ChargeAll(context.Background(), fill[:k]); err != nil {
				t.Fatal(err)
			}
			fill = fill[k:]
		}
		if _, err := s.Charge(context.Background(), Charge{Account: Account{Dataset: "d", Identity: "acme"}, Key: "warm", Kind: "q", Relation: RelationRecord, Cost: Cost{Epsilon: 1}}); err != nil {
			t.Fatal(err)
		}
		*rows = 0
		if _, err := s.Charge(context.Background(), Charge{Account: Account{Dataset: "d", Identity: "acme"}, Key: "k", Kind: "q", Relation: RelationRecord, Cost: Cost{Epsilon: 1}}); err != nil {
			t.Fatal(err)
		}
		read[n] = *rows
		s.Close()
	}
	t.Logf("rows read by one charge: %v (other identities: rows)", read)
	// The identity's row under record and the dataset's under each relation, the two
	// whole-patient rows: at most 8, whatever n.
	if read[10] != read[2000] || read[10] > 8 {
		t.Errorf("rows read by one charge: %d with 10 other identities, %d with 2,000; want the same, at most 8", read[10], read[2000])
	}
}
