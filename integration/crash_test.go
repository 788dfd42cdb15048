package integration

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/curatorclient"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// realCurator is a curator running as a separate process.
type realCurator struct {
	cmd  *exec.Cmd
	addr string
}

func startRealCurator(t *testing.T, bin string, args ...string) *realCurator {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "addr")
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--log-level", "warn"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			return &realCurator{cmd: cmd, addr: strings.TrimSpace(string(b))}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("curator did not start within 20 s; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *realCurator) kill() {
	c.cmd.Process.Kill() // SIGKILL
	c.cmd.Wait()
}

// delivered is what the client actually received: the only releases that matter for
// privacy.
type delivered struct {
	mu          sync.Mutex
	projections map[string][]float64 // label → Z
	answers     map[int]float64
	cost        float64 // Σ ε of the distinct releases received
}

// TestSIGKILLDuringReleases kills a real curator process with SIGKILL 20 times while
// clients make releases, restarts it on the same state directory each time, and checks
// that the ledger's spent total covers everything ever delivered and that repeated
// requests return the stored results.
func TestSIGKILLDuringReleases(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a real process 20 times")
	}
	bin := buildBinary(t, "./cmd/curator")
	state := t.TempDir()
	const projEps, answerEps = 0.05, 0.001
	args := []string{"--data", diabetesPath, "--target", "progression", "--dataset-id", "diabetes", "--state", state,
		"--budget-epsilon", "1000", "--budget-delta", "0.5",
		"--output-privacy", "laplace", "--output-epsilon", fmt.Sprint(answerEps), "--schema", diabetesSchema}
	got := &delivered{projections: map[string][]float64{}, answers: map[int]float64{}}
	rng := rand.New(rand.NewPCG(1, 2))
	next := 0 // next projection label
	for round := 0; round < 20; round++ {
		cur := startRealCurator(t, bin, args...)
		client := curatorv1.NewCuratorServiceClient(dial(t, cur.addr, "crash-vendor"))
		ctx := context.Background()

		// What was delivered before the crash is still charged and still replays.
		verifyReplays(t, ctx, client, got)
		b, err := client.GetBudget(ctx, &curatorv1.GetBudgetRequest{})
		if err != nil {
			t.Fatal(err)
		}
		got.mu.Lock()
		if spent := b.GetBudget().GetEpsilonSpent(); spent < got.cost-1e-9 {
			t.Fatalf("round %d: ledger spent ε = %g < %g delivered", round, spent, got.cost)
		}
		got.mu.Unlock()

		// Release concurrently, and kill the process in the middle: once this round
		// has delivered a drawn number of releases (its eight projections and then up
		// to seven answers), with the other workers' requests still in flight. The
		// kill follows deliveries, not a timer, so a slow machine changes nothing.
		rctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		killAt := int64(8 + rng.IntN(8))
		var deliveries atomic.Int64
		enough := make(chan struct{})
		delivered := func() {
			if deliveries.Add(1) == killAt {
				close(enough)
			}
		}
		for w := 0; w < 4; w++ {
			wg.Add(1)
			labels := []string{fmt.Sprintf("p%d", next), fmt.Sprintf("p%d", next+1)}
			next += 2
			seed := rng.Uint64()
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(seed, 0))
				for k := 0; rctx.Err() == nil; k++ {
					if k < len(labels) {
						p, err := curatorclient.FetchProjection(rctx, client, &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: projEps, Delta: 1e-6, Label: labels[k]})
						if err == nil {
							got.add(func() {
								if _, ok := got.projections[labels[k]]; !ok {
									got.projections[labels[k]] = p.Z
									got.cost += projEps
								}
							})
							delivered()
						}
						continue
					}
					i := r.IntN(442)
					resp, err := client.Query(rctx, &curatorv1.QueryRequest{Indices: []uint64{uint64(i)}})
					if err == nil {
						got.add(func() {
							if _, ok := got.answers[i]; !ok {
								if len(got.answers) == 0 {
									// The answers compose in parallel: the identity
									// pays ε once, for the first of them.
									got.cost += answerEps
								}
								got.answers[i] = resp.GetObservations()[0].GetValue()
							}
						})
						delivered()
					}
				}
			}()
		}
		select {
		case <-enough:
		case <-time.After(5 * time.Minute):
			// Not a kill timer: a curator that delivers nothing for minutes is a failure.
			cur.kill()
			cancel()
			wg.Wait()
			t.Fatalf("round %d: only %d of %d releases delivered in 5 minutes", round, deliveries.Load(), killAt)
		}
		cur.kill()
		cancel()
		wg.Wait()
	}
	cur := startRealCurator(t, bin, args...)
	defer cur.kill()
	client := curatorv1.NewCuratorServiceClient(dial(t, cur.addr, "crash-vendor"))
	verifyReplays(t, context.Background(), client, got)
	b, err := client.GetBudget(context.Background(), &curatorv1.GetBudgetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("delivered %d projections and %d answers (ε %.3f); ledger spent ε %.3f",
		len(got.projections), len(got.answers), got.cost, b.GetBudget().GetEpsilonSpent())
	if len(got.projections) < 5 || len(got.answers) < 20 {
		t.Errorf("only %d projections and %d answers were delivered: the kills came too early to test anything", len(got.projections), len(got.answers))
	}
	if spent := b.GetBudget().GetEpsilonSpent(); spent < got.cost-1e-9 {
		t.Errorf("ledger spent ε = %g < %g delivered", spent, got.cost)
	}
}

func (d *delivered) add(f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f()
}

// verifyReplays asks again for everything delivered: the curator must return the same
// bytes and values as replays.
func verifyReplays(t *testing.T, ctx context.Context, client curatorv1.CuratorServiceClient, got *delivered) {
	t.Helper()
	got.mu.Lock()
	defer got.mu.Unlock()
	for label, z := range got.projections {
		p, err := curatorclient.FetchProjection(ctx, client, &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 0.05, Delta: 1e-6, Label: label})
		if err != nil {
			t.Fatalf("replaying projection %s: %v", label, err)
		}
		if !p.Replayed || !equalBits(p.Z, z) {
			t.Fatalf("projection %s after restart: replayed=%v, same bytes=%v", label, p.Replayed, equalBits(p.Z, z))
		}
	}
	if len(got.answers) == 0 {
		return
	}
	var idx []uint64
	for i := range got.answers {
		idx = append(idx, uint64(i))
	}
	resp, err := client.Query(ctx, &curatorv1.QueryRequest{Indices: idx})
	if err != nil {
		t.Fatalf("replaying answers: %v", err)
	}
	for _, o := range resp.GetObservations() {
		if want := got.answers[int(o.GetIndex())]; !o.GetReplayed() || math.Float64bits(o.GetValue()) != math.Float64bits(want) {
			t.Fatalf("answer for row %d after restart = %g (replayed %v), want %g replayed", o.GetIndex(), o.GetValue(), o.GetReplayed(), want)
		}
	}
}
