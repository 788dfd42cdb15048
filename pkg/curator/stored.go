package curator

import "github.com/privbo/privbo/pkg/ledger"

// The stored-bytes quotas' defaults (Config.Stored), sized from the dataset's table
// of n rows and d features as float64s, T = 8·n·d bytes. A projection of dimension r
// ≤ d stores 8·n·r ≤ T bytes for replay, so an identity's default, 16·T, holds 16
// releases at r = d and more at smaller r: room for a study's projections and their
// retries, while one identity can fill no more than 16 times what the table itself
// takes. The dataset's default, 8 identities' worth (128·T), bounds what the release
// store (a PostgreSQL ledger's database, or --state) must hold for the dataset. Tiny
// tables get at least StoredFloor per identity.
const (
	StoredPerIdentityTables = 16
	StoredDatasetIdentities = 8
	StoredFloor             = 64 << 20
)

// DefaultStoredQuota is Config.Stored's default for a table of n rows and d features.
func DefaultStoredQuota(n, d int) ledger.StoredQuota {
	id := max(StoredPerIdentityTables*8*int64(n)*int64(d), StoredFloor)
	return ledger.StoredQuota{PerIdentity: id, Dataset: StoredDatasetIdentities * id}
}

// storedBytes is what a projection of dimension r stores for replay: its n×r matrix
// of float64s.
func (c *Curator) storedBytes(r int) int64 { return 8 * int64(c.ds.N) * int64(r) }

// StoredQuota is the stored-bytes quotas this curator reserves its releases under
// (Config.Stored, resolved).
func (c *Curator) StoredQuota() ledger.StoredQuota { return c.cfg.Stored }
