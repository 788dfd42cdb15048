package curator

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/testrace"
	"github.com/privbo/privbo/pkg/ledger"
)

// TestClipRangeRefused: a clip range outside the public output range, empty or not a
// number, a clip range or a confirmation pass asked of exact answers, and a pass outside
// [0, MaxPass] are refused as invalid arguments before anything is evaluated, released
// or charged.
func TestClipRangeRefused(t *testing.T) {
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 10}, Dataset: ledger.Cost{Epsilon: 10}}
	c, led, _ := rowsCurator(t, 20, limits, func(cfg *Config) {
		cfg.Output = OutputPrivacy{Mechanism: "laplace", Epsilon: 1, Lower: 0, Upper: 200}
	})
	exact, _, _ := rowsCurator(t, 20, limits, func(cfg *Config) { cfg.Output = OutputPrivacy{Mechanism: "none"} })
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		cur  *Curator
		opt  QueryOptions
	}{
		{"below the public range", c, QueryOptions{Clip: Clip{-1, 100}}},
		{"above the public range", c, QueryOptions{Clip: Clip{100, 200.5}}},
		{"empty", c, QueryOptions{Clip: Clip{50, 50}}},
		{"reversed", c, QueryOptions{Clip: Clip{150, 50}}},
		{"not a number", c, QueryOptions{Clip: Clip{math.NaN(), 50}}},
		{"too narrow to calibrate", c, QueryOptions{Clip: Clip{0, 1e-310}}},
		{"negative pass", c, QueryOptions{Pass: -1}},
		{"pass above MaxPass", c, QueryOptions{Pass: MaxPass + 1}},
		{"clip of exact answers", exact, QueryOptions{Clip: Clip{0, 100}}},
		{"pass of exact answers", exact, QueryOptions{Pass: 1}},
	} {
		if _, _, err := tc.cur.QueryWith(ctx, "alice", []int{1, 2}, tc.opt); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: QueryWith(%+v) = %v, want ErrInvalidArgument", tc.name, tc.opt, err)
		}
	}
	if b := spent(t, led, "alice"); b.Spent.Epsilon != 0 {
		t.Errorf("refused queries charged ε = %g", b.Spent.Epsilon)
	}
	entries, err := led.Entries(ctx, "ds-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("a refused query left ledger record %s (%s)", e.Key, e.Kind)
	}
	// The edges of the public range are inside it.
	if _, _, err := c.QueryWith(ctx, "alice", []int{1}, QueryOptions{Clip: Clip{0, 200}}); err != nil {
		t.Errorf("clip range = the public range: %v", err)
	}
}

// TestClipNoiseCalibrated: an answer clipped to [lo, hi] inside the public range is
// clip(y, [lo, hi]) plus Laplace noise of scale (hi − lo)/ε (up to the lattice's
// rounding up, dp.Laplace), not the public range's: the mean of many releases of a value
// below lo (above hi) is lo (hi), and their mean absolute deviation, the scale, is
// (hi − lo)/ε. Ignoring the clip range (the public range's scale 2400, clipping to 0 or
// 1200) or calibrating to the public width fails by hundreds of standard errors.
func TestClipNoiseCalibrated(t *testing.T) {
	testrace.Statistical(t)
	const eps, lo, hi = 0.5, 100.0, 140.0
	r, err := newOutputReleaser(OutputPrivacy{Mechanism: "laplace", Epsilon: eps, Lower: 0, Upper: 1200})
	if err != nil {
		t.Fatal(err)
	}
	clip, err := r.clipFor(Clip{lo, hi})
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.mechanismFor(clip)
	if err != nil {
		t.Fatal(err)
	}
	want := (hi - lo) / eps
	if s := (m.NoiseSD() / math.Sqrt2); s < want || s > want*1.01 {
		t.Errorf("scale of answers clipped to [%g, %g] at ε = %g: %g, want (hi − lo)/ε = %g (≤ 1%% above for the lattice)", lo, hi, eps, s, want)
	}
	if sd, err := r.noiseSDFor(clip); err != nil || math.Abs(sd-math.Sqrt2*(m.NoiseSD()/math.Sqrt2)) > 1e-9 {
		t.Errorf("noiseSDFor = %g, %v; want √2 × the scale", sd, err)
	}
	pub, _ := r.clipFor(Clip{})
	if pub != (Clip{0, 1200}) {
		t.Errorf("the zero Clip is %v, want the public range [0, 1200]", pub)
	}
	const n = 20000
	for _, tc := range []struct{ y, centre float64 }{{-1000, lo}, {5000, hi}, {120, 120}} {
		var sum, dev float64
		for range n {
			v, err := r.release(tc.y, clip)
			if err != nil {
				t.Fatal(err)
			}
			sum += v
			dev += math.Abs(v - tc.centre)
		}
		mean, mad := sum/n, dev/n
		// Laplace(b): sd √2·b, so the mean's standard error is √2·b/√n ≈ 0.8 here; the
		// mean absolute deviation b has standard error b/√n ≈ 0.57.
		if se := math.Sqrt2 * want / math.Sqrt(n); math.Abs(mean-tc.centre) > 5*se {
			t.Errorf("y = %g: mean of %d releases clipped to [%g, %g] is %.2f, want %g ± %.2f", tc.y, n, lo, hi, mean, tc.centre, 5*se)
		}
		if se := want / math.Sqrt(n); math.Abs(mad-want) > 5*se+want*0.01 {
			t.Errorf("y = %g: mean absolute deviation %.2f, want the scale %g", tc.y, mad, want)
		}
	}
}

// TestClipSameChargeAndRecorded: answers clipped to a narrower range are paid by the
// identity's one charge for its answers (the same key and ε as public-range answers: the
// guarantee is the same, and the charge says a narrower range may be asked), each answer
// reports the range it was released with, a row asked again with another range is
// replayed with its first range, and the range survives a restart (the ledger record).
func TestClipSameChargeAndRecorded(t *testing.T) {
	const eps = 0.5
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 10}, Dataset: ledger.Cost{Epsilon: 10}}
	c, led, cfg := rowsCurator(t, 20, limits, func(cfg *Config) {
		cfg.Output = OutputPrivacy{Mechanism: "laplace", Epsilon: eps, Lower: 0, Upper: 200}
	})
	ctx := context.Background()
	narrow := Clip{100, 150}
	obs, _, err := c.QueryWith(ctx, "alice", []int{0, 1, 2}, QueryOptions{Clip: narrow})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range obs {
		if o.Clip != narrow || o.Replayed {
			t.Errorf("row %d: clip %v replayed %v, want %v, fresh", o.Index, o.Clip, o.Replayed, narrow)
		}
	}
	pub, _, err := c.Query(ctx, "alice", []int{3, 0})
	if err != nil {
		t.Fatal(err)
	}
	if pub[0].Clip != (Clip{0, 200}) || pub[0].Replayed {
		t.Errorf("row 3 asked without a clip range: clip %v replayed %v, want the public range, fresh", pub[0].Clip, pub[0].Replayed)
	}
	if pub[1].Clip != narrow || !pub[1].Replayed || pub[1].Value != obs[0].Value {
		t.Errorf("row 0 asked again: %+v, want its first answer %g replayed with clip %v", pub[1], obs[0].Value, narrow)
	}
	if b := spent(t, led, "alice"); math.Abs(b.Spent.Epsilon-eps) > 1e-12 {
		t.Errorf("answers clipped to two ranges charged ε = %g, want one charge of %g", b.Spent.Epsilon, eps)
	}
	entries, err := led.Entries(ctx, "ds-1")
	if err != nil {
		t.Fatal(err)
	}
	charges := 0
	for _, e := range entries {
		switch e.Kind {
		case ledger.KindQueryAnswers:
			charges++
			if e.Key != "query-answers/laplace/eps=0.5/delta=0/range=0,200" || !strings.Contains(e.Description, "narrower clip range") || e.Cost.Epsilon != eps {
				t.Errorf("the answers' charge: key %q, ε %g, %q; want the public range's key, ε %g, and the clip range stated", e.Key, e.Cost.Epsilon, e.Description, eps)
			}
		case ledger.KindQuery:
			if e.Key == "query/1" && !strings.Contains(e.Description, "clipped to [100, 150]") {
				t.Errorf("row 1's record does not state its clip range: %q", e.Description)
			}
		}
	}
	if charges != 1 {
		t.Errorf("%d answer charges, want 1", charges)
	}
	// A new curator on the same ledger replays the answer with its range.
	c2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := c2.Query(ctx, "alice", []int{1, 3})
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Clip != narrow || again[0].Value != obs[1].Value || again[1].Clip != (Clip{0, 200}) || again[1].Value != pub[0].Value {
		t.Errorf("after a restart: %+v, want row 1 = %g clipped to %v and row 3 = %g on the public range", again, obs[1].Value, narrow, pub[0].Value)
	}
	res, err := Results(ctx, led, "ds-1")
	if err != nil || len(res) != 1 || len(res[0].Rows) != 4 {
		t.Fatalf("Results = %+v, %v; want alice's 4 rows", res, err)
	}
	if res[0].Rows[1].Index != 1 || res[0].Rows[1].Answer != obs[1].Value {
		t.Errorf("Results reads row 1's clipped answer as %+v, want %g", res[0].Rows[1], obs[1].Value)
	}
}

// TestConfirmationPass: a confirmation pass answers rows again with fresh noise and is
// paid by a charge of its own (the output setting's ε again, a key of its own), once for
// all the rows of that pass; a row asked twice in one pass is replayed; each further pass
// is charged again; the hospital's view lists the pass of each answer.
func TestConfirmationPass(t *testing.T) {
	const eps = 0.5
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 10}, Dataset: ledger.Cost{Epsilon: 10}}
	c, led, _ := rowsCurator(t, 20, limits, func(cfg *Config) {
		cfg.Output = OutputPrivacy{Mechanism: "laplace", Epsilon: eps, Lower: 0, Upper: 200}
	})
	ctx := context.Background()
	first, _, err := c.Query(ctx, "alice", []int{4, 5, 6})
	if err != nil {
		t.Fatal(err)
	}
	conf, _, err := c.QueryWith(ctx, "alice", []int{4, 5}, QueryOptions{Pass: 1, Clip: Clip{20, 120}})
	if err != nil {
		t.Fatal(err)
	}
	for k, o := range conf {
		if o.Replayed || o.Value == first[k].Value || o.Clip != (Clip{20, 120}) {
			t.Errorf("pass 1, row %d: %+v; want a fresh answer (pass 0 answered %g) clipped to [20, 120]", o.Index, o, first[k].Value)
		}
	}
	if b := spent(t, led, "alice"); math.Abs(b.Spent.Epsilon-2*eps) > 1e-12 {
		t.Errorf("after one confirmation pass ε spent = %g, want 2 × %g", b.Spent.Epsilon, eps)
	}
	again, _, err := c.QueryWith(ctx, "alice", []int{5, 6}, QueryOptions{Pass: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !again[0].Replayed || again[0].Value != conf[1].Value || again[1].Replayed {
		t.Errorf("pass 1 again: %+v; want row 5 replayed (%g) and row 6 fresh", again, conf[1].Value)
	}
	if b := spent(t, led, "alice"); math.Abs(b.Spent.Epsilon-2*eps) > 1e-12 {
		t.Errorf("more rows in pass 1 charged again: ε spent = %g, want %g", b.Spent.Epsilon, 2*eps)
	}
	if _, _, err := c.QueryWith(ctx, "alice", []int{4}, QueryOptions{Pass: 2}); err != nil {
		t.Fatal(err)
	}
	if b := spent(t, led, "alice"); math.Abs(b.Spent.Epsilon-3*eps) > 1e-12 {
		t.Errorf("after pass 2 ε spent = %g, want 3 × %g", b.Spent.Epsilon, eps)
	}
	entries, err := led.Entries(ctx, "ds-1")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, e := range entries {
		if e.Kind == ledger.KindQueryAnswers {
			keys[e.Key] = true
			if strings.HasSuffix(e.Key, "/pass=1") && !strings.Contains(e.Description, "confirmation pass 1") {
				t.Errorf("pass 1's charge does not say what it pays: %q", e.Description)
			}
		}
	}
	base := "query-answers/laplace/eps=0.5/delta=0/range=0,200"
	if len(keys) != 3 || !keys[base] || !keys[base+"/pass=1"] || !keys[base+"/pass=2"] {
		t.Errorf("answer charges %v, want %s and its /pass=1 and /pass=2", keys, base)
	}
	res, err := Results(ctx, led, "ds-1")
	if err != nil {
		t.Fatal(err)
	}
	passes := map[int]int{}
	for _, r := range res[0].Rows {
		passes[r.Pass]++
	}
	if passes[0] != 3 || passes[1] != 3 || passes[2] != 1 {
		t.Errorf("Results: answers per pass %v, want 3 in pass 0, 3 in pass 1, 1 in pass 2", passes)
	}
}
