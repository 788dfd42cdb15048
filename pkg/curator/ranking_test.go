package curator

import (
	"math"
	"testing"
)

// TestRanking pins the rule of `curator results` and the console on outcomes 1, 2, 2,
// 5: rank 1 is the best, ties share the best rank, the percentile is the share of
// outcomes no better, and the top 1% starts at numpy's linear 99th (or 1st)
// percentile: 2 + 0.97·3 = 4.91 (1.03 when minimizing).
func TestRanking(t *testing.T) {
	values := map[int]float64{0: 1, 1: 2, 2: 2, 3: 5}
	for _, tc := range []struct {
		maximize  bool
		v         float64
		rank      int
		pct       float64
		top       bool
		threshold float64
	}{
		{true, 5, 1, 1, true, 4.91},
		{true, 2, 2, 0.75, false, 4.91},
		{true, 1, 4, 0.25, false, 4.91},
		{false, 1, 1, 1, true, 1.03},
		{false, 2, 2, 0.75, false, 1.03},
		{false, 5, 4, 0.25, false, 1.03},
	} {
		rk := NewRanking(values, tc.maximize)
		rank, pct, top := rk.Rank(tc.v)
		if rank != tc.rank || pct != tc.pct || top != tc.top || math.Abs(rk.TopOnePercent-tc.threshold) > 1e-12 || rk.N() != 4 {
			t.Errorf("maximize=%v: Rank(%g) = %d, %g, %v (top 1%% from %g, among %d); want %d, %g, %v (from %g, among 4)",
				tc.maximize, tc.v, rank, pct, top, rk.TopOnePercent, rk.N(), tc.rank, tc.pct, tc.top, tc.threshold)
		}
	}
}
