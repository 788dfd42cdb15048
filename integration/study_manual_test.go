package integration

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/modeler"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestRecordedEvaluationsAcrossRestart: the curator evaluates rows only when a person
// (here a script) records them with 'curator record'. A study completes while the
// curator is killed and restarted under it; nothing pending is lost.
func TestRecordedEvaluationsAcrossRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and restarts a real curator")
	}
	bin := buildBinary(t, "./cmd/curator")
	state := t.TempDir()
	base := []string{"--data", diabetesPath, "--target", "progression", "--dataset-id", "diabetes", "--state", state,
		"--budget-epsilon", "100", "--budget-delta", "0.1", "--evaluate", "manual", "--output-privacy", "none", "--schema", diabetesSchema}
	cur := startRealCurator(t, bin, base...)
	addr := cur.addr
	ds := loadDiabetes(t)

	// The "lab": records every pending row with its true progression.
	stop := make(chan struct{})
	var recorded sync.Map
	var labWG sync.WaitGroup
	labWG.Add(1)
	go func() {
		defer labWG.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			out, err := exec.Command(bin, "pending", "--state", state, "--dataset-id", "diabetes").Output()
			if err != nil {
				continue // the ledger may be busy while the curator restarts
			}
			for _, f := range strings.Fields(string(out)) {
				i, err := strconv.Atoi(f)
				if err != nil {
					continue
				}
				v := fmt.Sprint(ds.Y[i])
				if exec.Command(bin, "record", "--state", state, "--dataset-id", "diabetes", "--index", f, "--value", v).Run() == nil {
					recorded.Store(i, true)
				}
			}
		}
	}()
	defer func() { close(stop); labWG.Wait() }()

	client := curatorv1.NewCuratorServiceClient(dial(t, addr, "lab-vendor"))
	var (
		res    *modeler.Result
		runErr error
		done   = make(chan struct{})
		steps  = make(chan int, 100)
	)
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, runErr = modeler.Run(ctx, curatorclient.New(client), modeler.Config{R: 3, Epsilon: 2, Delta: 1e-4, Iterations: 8, InitialIndex: 5,
			Progress: func(s modeler.Step) { steps <- s.Iteration }})
	}()
	// Kill the curator after the third answer, and restart it on the same address.
	for it := range steps {
		if it == 3 {
			break
		}
	}
	cur.kill()
	time.Sleep(300 * time.Millisecond)
	restarted := startRealCurator(t, bin, append([]string{"--listen", addr}, base...)...)
	defer restarted.kill()
	<-done
	if runErr != nil {
		t.Fatalf("study across a curator restart: %v", runErr)
	}
	if res.Iterations != 8 || len(res.Queried) != 8 {
		t.Fatalf("study finished %d iterations, want 8", res.Iterations)
	}
	for k, i := range res.Queried {
		if res.Values[k] != ds.Y[i] {
			t.Errorf("row %d answered %g, want the recorded %g", i, res.Values[k], ds.Y[i])
		}
		if _, ok := recorded.Load(i); !ok {
			t.Errorf("row %d was answered without being recorded", i)
		}
	}
	out, err := exec.Command(bin, "pending", "--state", state, "--dataset-id", "diabetes").Output()
	if err != nil || !strings.Contains(string(out), "no rows are waiting") {
		t.Errorf("pending after the study: %q, %v; want none", out, err)
	}
}
