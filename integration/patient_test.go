package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/refusal"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// postgresSchema returns the test server's DSN and a fresh schema, dropped when the
// test ends (after the curators using it stop).
func postgresSchema(t *testing.T) (string, string) {
	t.Helper()
	dsn := os.Getenv("PRIVBO_TEST_POSTGRES_DSN")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("PostgreSQL unreachable (set PRIVBO_TEST_POSTGRES_DSN): %v", err)
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "privbo_it_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		admin.Close(context.Background())
	})
	return dsn, schema
}

// wholePatientRefusal reports whether err is a refusal by the whole-patient cap: the
// budget's reason with the whole-patient metadata.
func wholePatientRefusal(err error) bool {
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted {
		return false
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == string(refusal.BudgetExceeded) && info.GetMetadata()["budget"] == "whole-patient" {
			return true
		}
	}
	return false
}

// TestWholePatientCapAcrossRelations is the audit's case on both ledger engines: an
// identity whose budget is ε = 10 under each relation, under a whole-patient cap of 10,
// cannot spend 10 under each of three relations (a projection stated for a unit as wide
// as the clip diameter, a Kusner job, a DP-HyPO job): once the whole-patient total is
// near 10 every further release is refused, whatever its relation, while each
// relation's own budget has room. curator ledger --json then states the whole-patient
// totals, which the test sums by hand from the charges it lists.
func TestWholePatientCapAcrossRelations(t *testing.T) {
	bin := buildBinary(t, "./cmd/curator")
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			state := t.TempDir()
			cfg := breastCancerConfig(t, state)
			// One unit is the clip diameter: a projection's (ε, δ) is the whole patient's.
			sc, err := dataset.ParseScaling("schema:" + filepath.Join("..", "examples", "data", "breast_cancer.schema.csv") + ";unit=50")
			if err != nil {
				t.Fatal(err)
			}
			cfg.Data.Scaling = sc
			cfg.Budget = ledger.Cost{Epsilon: 10, Delta: 1e-3}
			cfg.PatientBudget = ledger.Cost{Epsilon: 10, Delta: 1e-2}
			cfg.Jobs.TrainingConsented = true // Kusner jobs have a whole-patient figure
			ledgerArgs := []string{"--state", state}
			if engine == "postgres" {
				dsn, schema := postgresSchema(t)
				cfg.Ledger = config.LedgerConfig{Kind: "postgres", DSN: dsn, Schema: schema}
				ledgerArgs = []string{"--ledger", "postgres", "--ledger-dsn", dsn, "--ledger-schema", schema}
			}
			cur := startCurator(t, cfg)
			client := cur.client(t, "acme")
			patient := func() *curatorv1.WholePatientBudget {
				t.Helper()
				b, err := client.GetBudget(ctx, &curatorv1.GetBudgetRequest{})
				if err != nil {
					t.Fatal(err)
				}
				return b.GetBudget().GetWholePatient()
			}

			// 1. A DP-HyPO job (training-add-remove): its whole-patient figure is its
			// replacement, two add/remove steps, more than its own ε (about 2ε at the
			// same δ: the Rényi route keeps δ where group privacy would multiply it).
			spec := dphypoJob(true)
			spec.GetDphypo().Dpsgd.NoiseMultiplier, spec.GetDphypo().Dpsgd.ScoreNoiseMultiplier = 3, 6
			j, err := client.SubmitJob(ctx, &curatorv1.SubmitJobRequest{Spec: spec})
			if err != nil {
				t.Fatal(err)
			}
			waitJob(t, client, j.GetId())
			x := patient().GetEpsilonSpent()
			if !(x > j.GetEpsilonCharged() && x < 2.5*j.GetEpsilonCharged() && x < 7) {
				t.Fatalf("DP-HyPO job of ε %g: whole patient ε %g, want between ε and 2.5ε, below 7", j.GetEpsilonCharged(), x)
			}
			// 2. A Kusner job (validation-record) for half of what is left.
			half := (10 - x) / 2
			k, err := client.SubmitJob(ctx, &curatorv1.SubmitJobRequest{Spec: kusnerJob(curatorv1.KusnerSpec_ALGORITHM_LIPSCHITZ, half)})
			if err != nil {
				t.Fatal(err)
			}
			waitJob(t, client, k.GetId())
			// 3. Each relation still has room for ε = 10 − its spending, but the whole
			// patient has only (10 − x)/2: releases of 10 under each relation are refused.
			if _, err := curatorclient.FetchProjection(ctx, client, &curatorv1.ReleaseProjectionRequest{Dimension: 2, Epsilon: 10, Delta: 1e-5}); !wholePatientRefusal(err) {
				t.Errorf("projection of ε = 10 (feature-unit budget untouched): %v, want the whole-patient refusal", err)
			}
			if _, err := client.SubmitJob(ctx, &curatorv1.SubmitJobRequest{Spec: kusnerJob(curatorv1.KusnerSpec_ALGORITHM_LIPSCHITZ, 10-half)}); !wholePatientRefusal(err) {
				t.Errorf("Kusner job of ε = %g (validation-record budget %g left): %v, want the whole-patient refusal", 10-half, 10-half, err)
			}
			large := dphypoJob(true)
			large.GetDphypo().Dpsgd.NoiseMultiplier, large.GetDphypo().Dpsgd.ScoreNoiseMultiplier = 0, 0
			large.GetDphypo().TargetEpsilon = 9.99 - j.GetEpsilonCharged()
			if _, err := client.SubmitJob(ctx, &curatorv1.SubmitJobRequest{Spec: large}); !wholePatientRefusal(err) {
				t.Errorf("DP-HyPO job of ε ≈ %g (training-add-remove budget left): %v, want the whole-patient refusal", 9.99-j.GetEpsilonCharged(), err)
			}
			// 4. What is left fits.
			p, err := curatorclient.FetchProjection(ctx, client, &curatorv1.ReleaseProjectionRequest{Dimension: 2, Epsilon: half - 0.01, Delta: 1e-5})
			if err != nil {
				t.Fatalf("projection of the ε left: %v", err)
			}
			if w := p.Header.GetWholePatient(); !w.GetBounded() || w.GetEpsilon() > half-0.01 {
				t.Errorf("projection header whole patient = %v; want bounded at most its ε %g (unit = clip diameter)", w, half-0.01)
			}
			wp := patient()
			if !wp.GetBounded() || wp.GetEpsilonSpent() > 10 || wp.GetEpsilonLimit() != 10 || !strings.HasPrefix(wp.GetStatement(), "Whole patient (identity acme") {
				t.Errorf("GetBudget whole patient = %v, want bounded, at most the cap of 10", wp)
			}
			cur.stop(t)

			out, err := exec.Command(bin, append([]string{"ledger", "--dataset-id", "breast-cancer", "--json"}, ledgerArgs...)...).Output()
			if err != nil {
				t.Fatalf("curator ledger --json: %v", err)
			}
			var doc struct {
				WholePatient struct {
					Statement  string
					Identities []struct {
						Identity string
						Bounded  bool
						Releases int64
						Spent    struct {
							Epsilon, Delta float64
							EpsilonExact   string `json:"epsilon_exact"`
						}
					}
				} `json:"whole_patient"`
				Relations []struct {
					Relation   ledger.Relation
					Identities []struct {
						Identity string
						Spent    struct{ Epsilon float64 }
					}
				}
				Entries []struct {
					Identity, Kind string
					Relation       ledger.Relation
					Epsilon        float64
					WholePatient   struct {
						Bounded bool
						Epsilon float64
					} `json:"whole_patient"`
				}
			}
			if err := json.Unmarshal(out, &doc); err != nil {
				t.Fatalf("curator ledger --json: %v\n%s", err, out)
			}
			// By hand: the sum of the charges' whole-patient ε.
			sum, n := new(big.Rat), int64(0)
			kinds := map[ledger.Relation]bool{}
			for _, e := range doc.Entries {
				if e.Identity != "acme" {
					continue
				}
				if !e.WholePatient.Bounded {
					t.Errorf("entry %s has no whole-patient figure", e.Kind)
				}
				sum.Add(sum, new(big.Rat).SetFloat64(e.WholePatient.Epsilon))
				n++
				if e.Epsilon > 0 {
					kinds[e.Relation] = true
				}
			}
			if len(kinds) != 3 {
				t.Errorf("acme's charges span %v, want three relations", kinds)
			}
			if len(doc.WholePatient.Identities) != 1 {
				t.Fatalf("whole-patient identities = %+v, want acme's", doc.WholePatient.Identities)
			}
			got := doc.WholePatient.Identities[0]
			if exact, ok := new(big.Rat).SetString(got.Spent.EpsilonExact); !ok || exact.Cmp(sum) != 0 || got.Releases != n || !got.Bounded {
				t.Errorf("acme's whole-patient total = %s over %d releases, the charges sum to %s over %d", got.Spent.EpsilonExact, got.Releases, sum.RatString(), n)
			}
			if f, _ := sum.Float64(); f > 10*(1+ledger.RelativeSlack) {
				t.Errorf("acme's whole-patient total %g is above the cap of 10", f)
			}
			var perRelation float64
			for _, rr := range doc.Relations {
				for _, r := range rr.Identities {
					if r.Identity == "acme" && rr.Relation != ledger.RelationFeatureUnit {
						perRelation += r.Spent.Epsilon
					}
				}
			}
			if !strings.HasPrefix(doc.WholePatient.Statement, "Whole patient (dataset breast-cancer") {
				t.Errorf("statement = %q", doc.WholePatient.Statement)
			}
			t.Logf("%s (per-relation ε of the jobs %g)", doc.WholePatient.Statement, perRelation)
			if v, err := exec.Command(bin, append([]string{"ledger", "--dataset-id", "breast-cancer", "--verify"}, ledgerArgs...)...).CombinedOutput(); err != nil ||
				!strings.Contains(string(v), "ledger consistent") {
				t.Errorf("curator ledger --verify: %v\n%s", err, v)
			}
		})
	}
}

// TestRestartWithWiderUnit is docs/PRIVACY.md §4's restart: a curator restarted with
// ;unit=50 on the same state, asked for the projection it released at unit 1, makes a
// new release with the guarantee of unit 50; restarted again at unit 1, it replays the
// first release with the guarantee it was released with, word for word.
func TestRestartWithWiderUnit(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	schema := filepath.Join("..", "examples", "data", "breast_cancer.schema.csv")
	start := func(spec string) *curatorProc {
		cfg := breastCancerConfig(t, state)
		sc, err := dataset.ParseScaling("schema:" + schema + spec)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Data.Scaling = sc
		return startCurator(t, cfg)
	}
	req := &curatorv1.ReleaseProjectionRequest{Dimension: 2, Epsilon: 1, Delta: 1e-5}
	fetch := func(c *curatorProc) *curatorclient.Projection {
		p, err := curatorclient.FetchProjection(ctx, c.client(t, "acme"), req)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	c1 := start("")
	first := fetch(c1)
	c1.stop(t)
	c50 := start(";unit=50")
	wide := fetch(c50)
	c50.stop(t)
	if wide.Replayed || wide.ReleaseID == first.ReleaseID || wide.Header.GetGuarantee() == first.Header.GetGuarantee() ||
		!strings.Contains(wide.Header.GetGuarantee(), "at most 1 unit (the clip diameter)") {
		t.Errorf("after the restart with unit=50: %s (replayed %v), guarantee %q; want a new release with the guarantee of unit 50",
			wide.ReleaseID, wide.Replayed, wide.Header.GetGuarantee())
	}
	again := fetch(start(""))
	if !again.Replayed || again.ReleaseID != first.ReleaseID || again.Header.GetGuarantee() != first.Header.GetGuarantee() {
		t.Errorf("back at unit 1: %s (replayed %v); want %s replayed with its original guarantee", again.ReleaseID, again.Replayed, first.ReleaseID)
	}
}
