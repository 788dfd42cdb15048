package dp

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

// expNegFloorRef computes ⌊2^b·exp(−j/32)⌋ independently of expNegBounds:
// exp(+j/32) from its positive Taylor series (a lower bound S and an upper
// bound S + 2·t_{N+1} once the term ratio is below ½), at precision 2^−(b+96),
// then 2^b/exp(j/32) rounded both ways. It reports false if the two ends
// disagree (more precision needed).
func expNegFloorRef(j uint64, b uint) (*big.Int, bool) {
	p := b + 96
	one := new(big.Int).Lsh(big.NewInt(1), p)
	lo := new(big.Int)
	num, den := big.NewInt(1), big.NewInt(1) // x^k/k! = num/den
	x := new(big.Int).SetUint64(j)
	term := new(big.Int)
	terms := int64(0)
	for k := int64(0); ; k++ {
		terms++
		if k > 0 {
			num.Mul(num, x)
			den.Mul(den, big.NewInt(32*k))
		}
		term.Mul(one, num)
		term.Quo(term, den) // floor: lo stays a lower bound
		lo.Add(lo, term)
		// Stop when the next term is below 2^−p and the ratio x/(k+2) < ½.
		if 2*int64(j) < 32*(k+2) && term.Sign() == 0 {
			break
		}
	}
	// The tail after the last (zero) term is below 2·2^−p; each of the
	// floored terms lost below 2^−p.
	hi := new(big.Int).Add(lo, big.NewInt(2+terms))
	// 2^b·exp(−x) ∈ [2^(b+p)/hi, 2^(b+p)/lo].
	scale := new(big.Int).Lsh(big.NewInt(1), b+p)
	fl := new(big.Int).Quo(scale, hi)
	fh := new(big.Int).Quo(scale, lo)
	return fl, fl.Cmp(fh) == 0
}

// TestExpTable checks the table of ⌊2⁶⁴·exp(−j/32)⌋ and the longer
// expansions of the undecided-cell path against an independent evaluation,
// and the gaps geometricCountLocked relies on.
func TestExpTable(t *testing.T) {
	check := func(j uint64, b uint, got uint64, gotBig *big.Int) {
		want, ok := expNegFloorRef(j, b)
		if !ok {
			t.Fatalf("j = %d, b = %d: reference not precise enough", j, b)
		}
		if gotBig == nil {
			gotBig = new(big.Int).SetUint64(got)
		}
		if gotBig.Cmp(want) != 0 {
			t.Errorf("⌊2^%d·exp(−%d/32)⌋ = %v, reference %v", b, j, gotBig, want)
		}
	}
	for j := 1; j < expTabLen; j++ {
		if j < 64 || j%7 == 0 || j%32 == 0 || j > expTabLen-64 {
			check(uint64(j), 64, expTab[j], nil)
		}
		if j > 1 && expTab[j] > expTab[j-1] {
			t.Errorf("expTab[%d] = %d > expTab[%d] = %d", j, expTab[j], j-1, expTab[j-1])
		}
	}
	for _, j := range []uint64{1, 32, 33, 700, expTabLen - 1} {
		for _, b := range []uint{128, 192, 320} {
			check(j, b, 0, expNegFloor(j, b))
		}
	}
	for v := 1; v < expTabUnits; v++ {
		if expTab[(v+1)<<expTabShift]+1 > expTab[v<<expTabShift] {
			t.Errorf("expTab[32·%d] + 1 > expTab[32·%d]: geometricCountLocked's gap fails", v+1, v)
		}
	}
	for k := 1; k < fineTabMax; k++ {
		if expTab[k+1] >= expTab[k] {
			t.Errorf("expTab[%d] ≥ expTab[%d]: fineCountLocked's gap fails", k+1, k)
		}
	}
	if fineTab[fineTabMax] != expTab[fineTabMax] || fineTab[fineTabMax+1] != 0 {
		t.Error("fineTab is not expTab[..fineTabMax] followed by zeros")
	}
	// The guide: every entry up to fineGuide[i] is at least (i+1)·2⁵⁴ and
	// the next one is below it.
	for i := range fineGuide {
		g := int(fineGuide[i])
		top := new(big.Int).Lsh(big.NewInt(int64(i+1)), 54)
		if g > 0 && new(big.Int).SetUint64(expTab[g]).Cmp(top) < 0 {
			t.Errorf("fineGuide[%d] = %d: expTab[%d] below (i+1)·2⁵⁴", i, g, g)
		}
		if g < fineTabMax && new(big.Int).SetUint64(expTab[g+1]).Cmp(top) >= 0 {
			t.Errorf("fineGuide[%d] = %d: expTab[%d] not below (i+1)·2⁵⁴", i, g, g+1)
		}
	}
	if expTab[expTabLen-1] == 0 {
		t.Error("expTab's last entry is 0")
	}
}

func TestDivMod(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rnd := func() u128 {
		// Random bit length, then random bits below it.
		n := rng.IntN(129)
		var a u128
		a.lo, a.hi = rng.Uint64(), rng.Uint64()
		switch {
		case n == 0:
			return u128{}
		case n <= 64:
			a.hi = 0
			a.lo >>= 64 - n
			a.lo |= 1 << (n - 1)
		default:
			a.hi >>= 128 - n
			a.hi |= 1 << (n - 65)
		}
		return a
	}
	cases := [][2]u128{
		{{^uint64(0), ^uint64(0)}, {1, 0}},
		{{^uint64(0), ^uint64(0)}, {^uint64(0), ^uint64(0)}},
		{{^uint64(0), ^uint64(0)}, {1 << 63, 0}},
		{{1 << 63, 0}, {0, 3}},
		{{5, 7}, {5, 8}},
		{{5, 8}, {5, 8}},
		{{0, 7}, {0, ^uint64(0)}},
	}
	for range 20000 {
		b := rnd()
		if b.isZero() {
			continue
		}
		cases = append(cases, [2]u128{rnd(), b})
	}
	for _, c := range cases {
		a, b := c[0], c[1]
		q, r := a.divMod(b)
		wq, wr := new(big.Int).QuoRem(a.toBig(new(big.Int)), b.toBig(new(big.Int)), new(big.Int))
		if q.toBig(new(big.Int)).Cmp(wq) != 0 || r.toBig(new(big.Int)).Cmp(wr) != 0 {
			t.Fatalf("%v divMod %v = %v, %v; want %v, %v", a, b, q, r, wq, wr)
		}
	}
}

// TestBuildExpTableIncremental checks every entry of the incrementally built
// table against a fresh enclosure of each exp(−j/32) (expNegFloor).
func TestBuildExpTableIncremental(t *testing.T) {
	for j := 1; j < expTabLen; j++ {
		if want := expNegFloor(uint64(j), 64).Uint64(); expTab[j] != want {
			t.Errorf("expTab[%d] = %d, expNegFloor gives %d", j, expTab[j], want)
		}
	}
}
