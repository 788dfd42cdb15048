package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/privbo/privbo/pkg/ledger"
)

// A curator's ledger: every release is charged durably before it is sent; charging the
// same key again replays the record and spends nothing; a charge that would exceed a
// budget is refused and records nothing.
func Example() {
	dir, err := os.MkdirTemp("", "ledger-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	store, err := ledger.OpenSQLite(filepath.Join(dir, "ledger.db"), ledger.Limits{
		PerIdentity: ledger.Cost{Epsilon: 3, Delta: 1e-5},
		Dataset:     ledger.Cost{Epsilon: 10, Delta: 1e-4},
	})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	acct := ledger.Account{Dataset: "diabetes", Identity: "vendor"}
	charge := func(key string, eps float64) error {
		_, err := store.Charge(ctx, ledger.Charge{Account: acct, Key: key, Kind: "projection",
			Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: eps, Delta: 1e-6}})
		return err
	}
	fmt.Println("first release:", charge("release-1", 2))
	fmt.Println("the same release again:", charge("release-1", 2))
	err = charge("release-2", 2)
	fmt.Println("a second release refused:", errors.Is(err, ledger.ErrBudgetExceeded))
	b, err := store.Balance(ctx, acct, ledger.RelationFeatureUnit)
	if err != nil {
		panic(err)
	}
	fmt.Printf("spent ε=%g, remaining ε=%g\n", b.Spent.Epsilon, b.Remaining.Epsilon)
	// Output:
	// first release: <nil>
	// the same release again: <nil>
	// a second release refused: true
	// spent ε=2, remaining ε=1
}
