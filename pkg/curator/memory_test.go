package curator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/memory"
	"github.com/privbo/privbo/pkg/projection"
)

// memoryCurator is a curator over n rows of d features (deterministic values) with the
// lifted mechanism (which releases r > d), a memory budget of capacity bytes, and an
// identity budget of eps (δ 0.5).
func memoryCurator(t *testing.T, n, d int, capacity int64, eps float64) (*Curator, *ledger.Ledger) {
	t.Helper()
	var b strings.Builder
	for j := range d {
		fmt.Fprintf(&b, "x%d,", j)
	}
	b.WriteString("y\n")
	for i := range n {
		for j := range d {
			fmt.Fprintf(&b, "%d,", (i*(7+2*j)+j*j)%101)
		}
		fmt.Fprintf(&b, "%d\n", i%13)
	}
	ds, err := dataset.ParseCSV(strings.NewReader(b.String()), "mem", dataset.Options{Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleNone}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: eps, Delta: 0.5}, Dataset: ledger.Cost{Epsilon: eps, Delta: 0.5}}
	led, err := ledger.OpenSQLite(filepath.Join(dir, "ledger.db"), limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	c, err := New(Config{Dataset: ds, Ledger: led, StateDir: dir, ProjectionMechanism: projection.MechanismLifted, Memory: memory.NewBudget(capacity)})
	if err != nil {
		t.Fatal(err)
	}
	return c, led
}

// eventually returns once cond holds; the test's deadline bounds the wait (no timer of
// its own, so a loaded machine cannot make it fail).
func eventually(cond func() bool) {
	for !cond() {
		runtime.Gosched()
	}
}

// TestMemoryRefusal: a release needing more memory than the curator admits at once is
// refused before anything is computed, stored or charged, with the numbers and the
// largest r that fits; that r is then served.
func TestMemoryRefusal(t *testing.T) {
	ctx := context.Background()
	const capacity = 24 << 20
	c, led := memoryCurator(t, 20000, 4, capacity, 10)
	computed := 0
	c.computeHook = func() { computed++ }
	_, err := c.ReleaseProjection(ctx, "vendor", ProjectionRequest{R: 1024, Epsilon: 1, Delta: 1e-5})
	var me *MemoryError
	if !errors.As(err, &me) {
		t.Fatalf("r = 1024 with %s: %v, want a MemoryError", memory.MiB(capacity), err)
	}
	if me.Need != c.computeNeed(1024) || me.Limit != capacity || me.R != 1024 || me.Rows != 20000 {
		t.Errorf("MemoryError = %+v, want need %d, limit %d", me, c.computeNeed(1024), capacity)
	}
	if me.MaxR < 1 || c.computeNeed(me.MaxR) > capacity || c.computeNeed(me.MaxR+1) <= capacity {
		t.Errorf("MaxR = %d: need %d at it, %d above it; capacity %d", me.MaxR, c.computeNeed(me.MaxR), c.computeNeed(me.MaxR+1), capacity)
	}
	for _, want := range []string{memory.MiB(me.Need), memory.MiB(capacity), fmt.Sprintf("ask for r ≤ %d", me.MaxR)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if computed != 0 {
		t.Errorf("%d computations for a refused release", computed)
	}
	if bal, err := c.Balance(ctx, "vendor", ledger.RelationFeatureUnit); err != nil || bal.Charges != 0 {
		t.Errorf("after the refusal: %d charges, %v; want none", bal.Charges, err)
	}
	if files, _ := os.ReadDir(ReleasesDir(c.cfg.StateDir)); len(files) != 0 {
		t.Errorf("after the refusal the release store holds %d files", len(files))
	}

	p, err := c.ReleaseProjection(ctx, "vendor", ProjectionRequest{R: me.MaxR, Epsilon: 1, Delta: 1e-5})
	if err != nil {
		t.Fatalf("r = MaxR = %d: %v", me.MaxR, err)
	}
	rc, err := p.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if held := c.cfg.Memory.Held(); held != streamNeed(c.releases, p.Rows, p.Cols) {
		t.Errorf("while the release is read %d bytes are held, want its stream's %d", held, streamNeed(c.releases, p.Rows, p.Cols))
	}
	n, err := io.Copy(io.Discard, rc)
	rc.Close()
	if err != nil || n != int64(8*p.Rows*p.Cols) {
		t.Errorf("read %d bytes, %v; want %d", n, err, 8*p.Rows*p.Cols)
	}
	if held := c.cfg.Memory.Held(); held != 0 {
		t.Errorf("%d bytes held once the release is read and closed", held)
	}
	if b, _ := led.Balance(ctx, ledger.Account{Dataset: "mem", Identity: "vendor"}, ledger.RelationFeatureUnit); b.Charges != 1 {
		t.Errorf("%d charges, want the one release served", b.Charges)
	}

	// When even r = 1 does not fit (the lifted mechanism may need copies of the data),
	// the refusal says so rather than naming an r.
	big, _ := memoryCurator(t, 100000, 4, MinMemory, 10)
	_, err = big.ReleaseProjection(ctx, "vendor", ProjectionRequest{R: 2, Epsilon: 1, Delta: 1e-5})
	if !errors.As(err, &me) || me.MaxR != 0 || !strings.Contains(err.Error(), "no projection dimension fits") {
		t.Errorf("100,000 rows with %s: %v, want a MemoryError naming no r", memory.MiB(MinMemory), err)
	}
}

// TestMemoryConcurrentReleases sends 8 concurrent new releases to a curator whose memory
// admits 2 at once: exactly 2 are computed at any time, the others wait their turn and
// every one is served and charged. Computations are counted by the curator's test hook,
// which holds each until the test lets it go, so the test is deterministic.
func TestMemoryConcurrentReleases(t *testing.T) {
	ctx := context.Background()
	const n, d, r, k = 20000, 4, 100, 8
	c, led := memoryCurator(t, n, d, MinMemory, 10) // capacity set below
	need := c.computeNeed(r)
	c.cfg.Memory = memory.NewBudget(max(2*need+need/2, MinMemory)) // room for 2, not 3
	if 3*need <= c.cfg.Memory.Capacity() {
		t.Fatalf("need %d: the budget %d holds 3", need, c.cfg.Memory.Capacity())
	}
	var entered, finished atomic.Int64
	gate := make(chan struct{})
	c.computeHook = func() {
		entered.Add(1)
		<-gate
	}
	var wg sync.WaitGroup
	for i := range k {
		wg.Go(func() {
			_, err := c.ReleaseProjection(ctx, "vendor", ProjectionRequest{R: r, Epsilon: 0.5, Delta: 1e-5, Label: fmt.Sprint(i)})
			if err != nil {
				t.Error(err)
			}
			finished.Add(1)
		})
	}
	for done := int64(0); done < k; done++ {
		// done releases have finished; the next min(2, k − done) compute, the rest wait.
		running := min(2, k-done)
		eventually(func() bool {
			return entered.Load() > done+running || // too many: fail below rather than wait
				finished.Load() == done && entered.Load() == done+running && c.cfg.Memory.Waiting() == int(k-done-running)
		})
		if got := entered.Load() - finished.Load(); got != running {
			t.Errorf("%d computations at once with memory for 2", got)
			close(gate) // let every computation finish before the test ends
			wg.Wait()
			return
		}
		gate <- struct{}{} // one computation goes on and finishes
	}
	wg.Wait()
	if entered.Load() != k {
		t.Errorf("%d computations, want %d", entered.Load(), k)
	}
	if b, _ := led.Balance(ctx, ledger.Account{Dataset: "mem", Identity: "vendor"}, ledger.RelationFeatureUnit); b.Charges != k {
		t.Errorf("%d charges, want %d", b.Charges, k)
	}
	if c.cfg.Memory.Held() != 0 {
		t.Errorf("%d bytes held at the end", c.cfg.Memory.Held())
	}
}

// TestMemoryWaitersRecheckBudget: 100 concurrent distinct releases with budget for 2
// and memory for one at a time. The budget is reserved before memory is asked for: 98
// are refused at once, without being computed or waiting; of the 2 that hold a
// reservation one computes while the other waits for its memory: 2 computations, 2
// charges. (TestConcurrentReleasesReserve has memory for all.)
func TestMemoryWaitersRecheckBudget(t *testing.T) {
	ctx := context.Background()
	const n, d, r, k = 20000, 4, 100, 100
	c, led := memoryCurator(t, n, d, MinMemory, 1)
	need := c.computeNeed(r)
	c.cfg.Memory = memory.NewBudget(max(need+need/2, MinMemory))
	if 2*need <= c.cfg.Memory.Capacity() {
		t.Fatalf("need %d: the budget %d holds 2", need, c.cfg.Memory.Capacity())
	}
	var entered atomic.Int64
	gate := make(chan struct{})
	c.computeHook = func() {
		entered.Add(1)
		<-gate
	}
	var refused atomic.Int64
	var wg sync.WaitGroup
	for i := range k {
		wg.Go(func() {
			_, err := c.ReleaseProjection(ctx, "vendor", ProjectionRequest{R: r, Epsilon: 0.5, Delta: 1e-5, Label: fmt.Sprint(i)})
			var be *ledger.BudgetError
			switch {
			case errors.As(err, &be):
				refused.Add(1)
			case err != nil:
				t.Error(err)
			}
		})
	}
	eventually(func() bool {
		return entered.Load() > 1 || entered.Load() == 1 && c.cfg.Memory.Waiting() == 1 && refused.Load() == k-2
	})
	if entered.Load() != 1 {
		t.Errorf("%d computations at once with memory for one", entered.Load())
	}
	close(gate)
	wg.Wait()
	if entered.Load() != 2 || refused.Load() != k-2 {
		t.Errorf("%d computed, %d refused; want 2 computed and %d refused", entered.Load(), refused.Load(), k-2)
	}
	if b, _ := led.Balance(ctx, ledger.Account{Dataset: "mem", Identity: "vendor"}, ledger.RelationFeatureUnit); b.Charges != 2 {
		t.Errorf("%d charges, want 2", b.Charges)
	}
}

// TestMemoryWaitHonoursContext: a release waiting for memory returns when its context
// ends, having computed and charged nothing.
func TestMemoryWaitHonoursContext(t *testing.T) {
	c, _ := memoryCurator(t, 20000, 4, MinMemory, 10)
	need := c.computeNeed(100)
	c.cfg.Memory = memory.NewBudget(max(need, MinMemory))
	hold, err := c.cfg.Memory.Acquire(context.Background(), c.cfg.Memory.Capacity()) // all of it
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	var computed atomic.Int64
	c.computeHook = func() { computed.Add(1) }
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.ReleaseProjection(ctx, "vendor", ProjectionRequest{R: 100, Epsilon: 0.5, Delta: 1e-5})
		errc <- err
	}()
	eventually(func() bool { return computed.Load() > 0 || c.cfg.Memory.Waiting() == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("ReleaseProjection waiting for memory, cancelled: %v, want context.Canceled", err)
	}
	if bal, _ := c.Balance(context.Background(), "vendor", ledger.RelationFeatureUnit); computed.Load() != 0 || bal.Charges != 0 {
		t.Errorf("%d computed, %d charged; want none", computed.Load(), bal.Charges)
	}
}

// TestNewRefusesTinyMemory: a budget that cannot stream a release is refused.
func TestNewRefusesTinyMemory(t *testing.T) {
	c, led := memoryCurator(t, 10, 2, MinMemory, 1)
	if _, err := New(Config{Dataset: c.ds, Ledger: led, StateDir: t.TempDir(), Memory: memory.NewBudget(MinMemory - 1)}); err == nil {
		t.Error("New with a budget below MinMemory: no error")
	}
}
