package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/ledger"
)

// Job specs as curators wrote them to jobs.db before the grid's axes were hparam.Axis
// (they were jobs.Range, a struct of the same JSON form): printed by json.Marshal of a
// jobs.Spec with jobs.Range axes, at commit 798d58f.
const (
	recordDPHyPO = `{"dphypo":{"space":[{"name":"learning_rate","scale":"log","low":0.05,"high":2,"count":4},{"name":"clip_norm","scale":"list","values":[0.5,1,2]},{"name":"l2","scale":"linear","high":0.01,"count":3}],"theta":1,"gamma":0.1,"c_max":2,"c_min":0.75,"tau":0.1,"beta":1,"uniform":false,"dpsgd":{"learning_rate":0.5,"clip_norm":1,"noise_multiplier":1,"epochs":5,"batch_size":64,"l2":0.001,"score_noise_multiplier":2},"delta":0.00001}}`
	recordKusner = `{"kusner":{"algorithm":1,"space":[{"name":"lambda","scale":"log","low":0.0001,"high":10,"count":16}],"iterations":20,"epsilon":1,"delta":0.001,"k1":0,"noise_variance":0,"gamma_t":0,"a":0,"tau":0,"lengthscale":0}}`
)

// TestRecordsOfEarlierCuratorsLoad stores job rows with specs in the earlier format,
// as an upgraded curator finds them in its jobs.db, and checks that they load with the
// axes they were given, that they expand to the grid they denoted, that they are
// written back byte for byte (so comparing specs is unchanged), and that resubmitting
// the same spec with the same idempotency key still finds the job rather than
// reporting the key reused.
func TestRecordsOfEarlierCuratorsLoad(t *testing.T) {
	dir := t.TempDir()
	st, err := OpenSQLite(filepath.Join(dir, "jobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for key, spec := range map[string]string{"dphypo-key": recordDPHyPO, "kusner-key": recordKusner} {
		if err := st.e.Write(ctx, ledger.Lock{}, func(q ledger.Querier) error {
			_, err := q.Exec(ctx, `INSERT INTO jobs (`+jobColumns+`) VALUES (?, 'alice', ?, ?, 'succeeded', 1, 0, 'g', NULL, '', 1, 1)`,
				jobID("alice", key), key, spec)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	m, led := newTestManager(t, dir, &fakeRunner{})
	defer led.Close()
	defer m.Close()
	wantAxes := map[string][]hparam.Axis{
		"dphypo-key": {
			{Name: "learning_rate", Kind: hparam.AxisLog, Low: 0.05, High: 2, Count: 4},
			{Name: "clip_norm", Kind: hparam.AxisList, Values: []float64{0.5, 1, 2}},
			{Name: "l2", Kind: hparam.AxisLinear, Low: 0, High: 0.01, Count: 3},
		},
		"kusner-key": {{Name: "lambda", Kind: hparam.AxisLog, Low: 1e-4, High: 10, Count: 16}},
	}
	fresh := map[string]Spec{
		"dphypo-key": {DPHyPO: &DPHyPOSpec{Space: wantAxes["dphypo-key"], Theta: 1, Gamma: 0.1, CMax: 2, CMin: 0.75, Tau: 0.1, Beta: 1, Delta: 1e-5,
			DPSGD: DPSGD{LearningRate: 0.5, ClipNorm: 1, NoiseMultiplier: 1, Epochs: 5, BatchSize: 64, L2: 1e-3, ScoreNoiseMultiplier: 2}}},
		"kusner-key": {Kusner: &KusnerSpec{Algorithm: 1, Space: wantAxes["kusner-key"], Iterations: 20, Epsilon: 1, Delta: 1e-3}},
	}
	for key, record := range map[string]string{"dphypo-key": recordDPHyPO, "kusner-key": recordKusner} {
		j, err := m.Get(ctx, "alice", jobID("alice", key))
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		var axes []hparam.Axis
		if j.Spec.DPHyPO != nil {
			axes = j.Spec.DPHyPO.Space
		} else if j.Spec.Kusner != nil {
			axes = j.Spec.Kusner.Space
		}
		if !reflect.DeepEqual(axes, wantAxes[key]) {
			t.Errorf("%s: loaded axes %+v, want %+v", key, axes, wantAxes[key])
		}
		space, err := hparam.SpaceOf(axes...)
		if err != nil {
			t.Errorf("%s: the loaded axes do not build a grid: %v", key, err)
		} else if want := map[string]int{"dphypo-key": 4 * 3 * 3, "kusner-key": 16}[key]; space.Size() != want {
			t.Errorf("%s: grid of %d points, want %d", key, space.Size(), want)
		}
		if b, err := json.Marshal(j.Spec); err != nil || string(b) != record {
			t.Errorf("%s: the loaded spec marshals to\n%s\nwant the record\n%s", key, b, record)
		}
		// A retry of the original submission, as the server now decodes it.
		again, err := m.Submit(ctx, "alice", key, fresh[key])
		if err != nil || again.ID != j.ID {
			t.Errorf("%s: resubmission = %s, %v; want the stored job %s", key, again.ID, err, j.ID)
		}
	}
	// A different grid under the same key is still refused.
	j, _ := m.Get(ctx, "alice", jobID("alice", "kusner-key"))
	other := *j.Spec.Kusner
	other.Space = []hparam.Axis{{Name: "lambda", Kind: hparam.AxisLog, Low: 1e-4, High: 10, Count: 8}}
	if _, err := m.Submit(ctx, "alice", "kusner-key", Spec{Kusner: &other}); !errors.Is(err, ErrKeyReused) {
		t.Errorf("resubmission with another grid: error = %v, want ErrKeyReused", err)
	}
}
