package curator

import (
	"context"
	"time"

	"github.com/privbo/privbo/pkg/ledger"
)

// Ledger is what a Curator uses of its privacy ledger, a *ledger.Ledger (whose
// methods say what each does): it reserves, commits and charges releases, reads
// their records back, and reads the balances a release is checked against.
type Ledger interface {
	Charge(ctx context.Context, c ledger.Charge) (ledger.Receipt, error)
	Reserve(ctx context.Context, cs []ledger.Charge, h ledger.Hold) (*ledger.Reservation, error)
	Commit(ctx context.Context, r *ledger.Reservation, cs []ledger.Charge) ([]ledger.Receipt, error)
	Cancel(ctx context.Context, r *ledger.Reservation) error
	Extend(ctx context.Context, r *ledger.Reservation, ttl time.Duration) error
	DropReservations(ctx context.Context, dataset, owner string) (int, error)
	Records
	Balance(ctx context.Context, a ledger.Account, rel ledger.Relation) (ledger.Balance, error)
	PatientBalance(ctx context.Context, a ledger.Account) (ledger.PatientBalance, error)
	Limits() ledger.Limits
}

// Records reads a ledger's records: what Results, Evaluations, PendingEvaluations
// and AdoptReleases read.
type Records interface {
	Get(ctx context.Context, a ledger.Account, key string) (ledger.Receipt, bool, error)
	Entries(ctx context.Context, dataset string) ([]ledger.Receipt, error)
}

// ResultLister reads the results of one kind of record in one query: what
// RemoveOrphans reads.
type ResultLister interface {
	KindResults(ctx context.Context, kind string, fn func(a ledger.Account, key string, result []byte) error) error
}
