package pgledger

import (
	"context"
	"fmt"

	"github.com/privbo/privbo/pkg/ledger"
)

// OpenEngine returns an engine on opt's schema of the database at dsn (created if
// missing), with the dialect that qualifies table names with that schema, for stores
// that keep their tables beside the ledger's so that every curator replica shares them
// (the jobs of package jobs, jobs.OpenPostgres). It keeps its own connections (at
// most opt.MaxConns, 0 meaning 8), apart from the ledger's; Close releases them.
func OpenEngine(ctx context.Context, dsn string, opt Options) (ledger.Engine, ledger.Dialect, error) {
	e, err := connect(ctx, dsn, opt, false)
	if err != nil {
		return nil, ledger.Dialect{}, err
	}
	err = e.Write(ctx, ledger.Lock{Migrate: true}, func(q ledger.Querier) error {
		_, err := q.Exec(ctx, e.dialect().SQL(`CREATE SCHEMA IF NOT EXISTS {schema}`))
		return err
	})
	if err != nil {
		e.Close()
		return nil, ledger.Dialect{}, fmt.Errorf("pgledger: creating postgres schema %s: %w", e.schema, err)
	}
	return e, e.dialect(), nil
}
