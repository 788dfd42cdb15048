package curator

import (
	"testing"

	"github.com/privbo/privbo/pkg/ledger"
)

// TestDefaultStoredQuota: 16 widest releases per identity (at least 64 MiB) and 8
// identities' worth for the dataset; figures worked by hand.
func TestDefaultStoredQuota(t *testing.T) {
	for _, tt := range []struct {
		n, r int
		want ledger.StoredQuota
	}{
		{442, 10, ledger.StoredQuota{PerIdentity: 64 << 20, Dataset: 512 << 20}},                 // 565,760 bytes: the floor
		{1_770_000, 10, ledger.StoredQuota{PerIdentity: 2_265_600_000, Dataset: 18_124_800_000}}, // 16·8·n·r
		{20_000, 1024, ledger.StoredQuota{PerIdentity: 2_621_440_000, Dataset: 20_971_520_000}},  // lifted, r = 1024
	} {
		if got := DefaultStoredQuota(tt.n, tt.r); got != tt.want {
			t.Errorf("DefaultStoredQuota(%d, %d) = %+v, want %+v", tt.n, tt.r, got, tt.want)
		}
	}
}
