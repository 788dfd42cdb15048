package curator

import (
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/projection"
)

// The stored-bytes quotas' defaults (Config.Stored), sized from the widest release
// the curator makes, W = 8·n·r bytes at its largest r (widest): the table's own size,
// 8·n·d, under the Gaussian mechanism, where r ≤ d. An identity's default, 16·W, holds
// 16 releases at the largest r and more at smaller r: room for a study's projections
// and their retries, while one identity can fill no more than 16 times what the table
// itself takes. The dataset's default, 8 identities' worth (128·W), bounds what the
// release store (a PostgreSQL ledger's database, or --state) must hold for the dataset.
// Tiny tables get at least StoredFloor per identity.
const (
	StoredPerIdentityReleases = 16
	StoredDatasetIdentities   = 8
	StoredFloor               = 64 << 20
)

// DefaultStoredQuota is Config.Stored's default for a table of n rows whose widest
// release has r columns.
func DefaultStoredQuota(n, r int) ledger.StoredQuota {
	id := max(StoredPerIdentityReleases*8*int64(n)*int64(r), StoredFloor)
	return ledger.StoredQuota{PerIdentity: id, Dataset: StoredDatasetIdentities * id}
}

// widest is the largest projection dimension the curator of cfg releases with proj:
// MaxProjectionDim, and at most d when the mechanism adds noise (validate).
func widest(cfg Config, proj projection.Mechanism) int {
	if proj.AddsNoise() && !cfg.AllowWideProjection {
		return min(cfg.MaxProjectionDim, cfg.Dataset.D)
	}
	return cfg.MaxProjectionDim
}

// storedBytes is what a projection of dimension r stores for replay: its n×r matrix
// of float64s.
func (c *Curator) storedBytes(r int) int64 { return 8 * int64(c.ds.N) * int64(r) }

// StoredQuota is the stored-bytes quotas this curator reserves its releases under
// (Config.Stored, resolved).
func (c *Curator) StoredQuota() ledger.StoredQuota { return c.cfg.Stored }
