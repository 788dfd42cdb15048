package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

func smallData(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("a,b,y\n")
	for i := range 20 {
		fmt.Fprintf(&b, "%d,%d,%d\n", i, (i*7)%11, i%5)
	}
	path := filepath.Join(t.TempDir(), "d.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigDefaultsAndRefusals: outputs are private by default (Laplace, ε = 1) and
// need a declared range; the dataset id is required; exact program answers need the
// explicit flag; exact answers are warned about.
func TestConfigDefaultsAndRefusals(t *testing.T) {
	base := Config{Listen: "127.0.0.1:0", DataPath: smallData(t), Data: dataset.Options{Target: "y"}, StateDir: t.TempDir(),
		Budget: ledger.Cost{Epsilon: 1, Delta: 1e-5}, DatasetID: "small"}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // substring of the error; "" for success
	}{
		{"no dataset id", func(c *Config) { c.DatasetID = "" }, "Config.DatasetID is required: budgets are kept per dataset id"},
		// Without a declared range the target's range comes from the schema or the
		// private estimate at Start (TestOutputRangePrecedence).
		{"default output without a range", func(c *Config) {}, ""},
		{"gaussian without a delta", func(c *Config) { c.Output = curator.OutputPrivacy{Mechanism: "gaussian"} }, "delta"},
		{"inverted range", func(c *Config) { c.Output = curator.OutputPrivacy{Lower: 5, Upper: 1} }, "lower < upper"},
		{"default output with a range", func(c *Config) { c.Output = curator.OutputPrivacy{Lower: 0, Upper: 5} }, ""},
		{"exact answers", func(c *Config) { c.Output = curator.OutputPrivacy{Mechanism: "none"} }, ""},
		{"exact program answers", func(c *Config) {
			c.Output = curator.OutputPrivacy{Mechanism: "none"}
			c.Evaluation = curator.Evaluation{Mode: curator.EvaluateProgram, Command: []string{"/bin/true"}}
		}, "set Config.AllowExactProgramAnswers"},
		{"exact program answers allowed", func(c *Config) {
			c.Output = curator.OutputPrivacy{Mechanism: "none"}
			c.Evaluation = curator.Evaluation{Mode: curator.EvaluateProgram, Command: []string{"/bin/true"}}
			c.AllowExactProgramAnswers = true
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.edit(&cfg)
			got, err := cfg.withDefaults()
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("withDefaults: %v, want an error containing %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "default output with a range" && (got.Output.Mechanism != "laplace" || got.Output.Epsilon != curator.DefaultOutputEpsilon) {
				t.Errorf("default output = %+v, want laplace with ε = %g", got.Output, curator.DefaultOutputEpsilon)
			}
			if got.ExactAnswersMaxRows != DefaultExactAnswersMaxRows {
				t.Errorf("exact-answer cap = %d, want the default %d", got.ExactAnswersMaxRows, DefaultExactAnswersMaxRows)
			}
			w := strings.Join(Warnings(got), "\n")
			// Laplace answers at ε_out = 1 carry noise √2 times the range's width.
			noisy := "WARNING: answer noise sd is 1.414× the range's width: expect a recommendation little better than a random row; ε_out = 2 would make it 0.71× (Config.Output.Epsilon"
			if got.Output.Mechanism == "laplace" && got.Output.Epsilon == 1 {
				if !strings.HasPrefix(w, noisy) {
					t.Errorf("default answers not warned about: %q", w)
				}
				w = ""
			}
			switch {
			case got.Output.Mechanism != "none" && w != "":
				t.Errorf("private outputs warned: %s", w)
			case got.Output.Mechanism == "none" && !strings.Contains(w, "WARNING: Config.Output.Mechanism none: query answers are EXACT and UNPROTECTED"):
				t.Errorf("exact answers not warned about: %q", w)
			case got.AllowExactProgramAnswers && !strings.Contains(w, "exact function of one record's features"):
				t.Errorf("exact program answers not warned about: %q", w)
			}
		})
	}
}

// TestDatasetInfoStatesProtection: GetDatasetInfo describes the dataset id, the
// projection's mechanism and relation, and the answers' guarantee; exact-answer
// refusals map to statuses a person can act on.
func TestDatasetInfoStatesProtection(t *testing.T) {
	cfg := Config{Listen: "127.0.0.1:0", DataPath: smallData(t), Data: dataset.Options{Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleNone}}, StateDir: t.TempDir(),
		Budget: ledger.Cost{Epsilon: 1, Delta: 1e-5}, DatasetID: "small-v1", DatasetName: "Small", Output: curator.OutputPrivacy{Mechanism: "none"},
		ExactAnswersMaxRows: 2}
	cfg, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.LoadCSV(cfg.DataPath, cfg.Data)
	if err != nil {
		t.Fatal(err)
	}
	ds.Name = cfg.DatasetName
	store, err := OpenLedger(context.Background(), cfg.Ledger, cfg.StateDir, ledger.Limits{PerIdentity: cfg.Budget, Dataset: cfg.Budget})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cur, err := curator.New(cfg.curatorConfig(ds, store))
	if err != nil {
		t.Fatal(err)
	}
	h := &handlers{cur: cur, log: zap.NewNop()}
	ctx := context.Background()
	info, err := h.GetDatasetInfo(ctx, &curatorv1.GetDatasetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	op := info.GetOutputPrivacy()
	if info.GetName() != "Small" || info.GetDatasetId() != "small-v1" || info.GetProjectionMechanism() != "gaussian" ||
		info.GetProjectionRelation() != "feature-unit" || op.GetRelation() != "record" || op.GetExactAnswersMaxRows() != 2 ||
		op.GetGuarantee() != cur.OutputGuarantee() || info.GetGuarantee() != cur.GuaranteeStatement() ||
		!strings.HasPrefix(op.GetGuarantee(), "no guarantee (ε = ∞): exact answers") {
		t.Errorf("dataset info = %v", info)
	}
	_, err = h.Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{0}})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), "request the projection first") {
		t.Errorf("exact query without a projection: %v, want FailedPrecondition asking for the projection", err)
	}
	if _, err := cur.ReleaseProjection(ctx, "anonymous", curator.ProjectionRequest{R: 1, Epsilon: 0.5, Delta: 1e-6}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{0, 1}}); err != nil {
		t.Fatal(err)
	}
	_, err = h.Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{2}})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "at most 2 distinct rows of the dataset, to all identities together") {
		t.Errorf("exact query past the cap: %v, want ResourceExhausted naming the cap", err)
	}
	// The refusal's ErrorInfo carries the reason and the figures, for clients that must
	// not read the message.
	var ei *errdetails.ErrorInfo
	for _, d := range status.Convert(err).Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok {
			ei = i
		}
	}
	want := map[string]string{"limit": "2", "answered": "2", "requested": "1"}
	if ei == nil || ei.GetReason() != ReasonExactRowLimit || ei.GetDomain() != ErrorDomain || !maps.Equal(ei.GetMetadata(), want) {
		t.Errorf("exact query past the cap: ErrorInfo %v, want reason %s, domain %s, metadata %v", ei, ReasonExactRowLimit, ErrorDomain, want)
	}
}

// TestFieldErrors: each refused setting comes back as a *FieldError naming the Config
// field at fault, and no message names a command-line flag (a front end maps the
// Config.<path> names to its own; see cmd/curator).
func TestFieldErrors(t *testing.T) {
	base := Config{Listen: "127.0.0.1:0", DataPath: smallData(t), Data: dataset.Options{Target: "y"}, StateDir: t.TempDir(),
		Budget: ledger.Cost{Epsilon: 1, Delta: 1e-5}, DatasetID: "small"}
	for _, tc := range []struct {
		edit  func(*Config)
		field string
	}{
		{func(c *Config) { c.StateDir = "" }, "StateDir"},
		{func(c *Config) { c.DatasetID = "" }, "DatasetID"},
		{func(c *Config) { c.DatasetID = "bad\x00id" }, "DatasetID"},
		{func(c *Config) { c.Budget = ledger.Cost{} }, "Budget.Epsilon"},
		{func(c *Config) { c.ProjectionMechanism = "magic" }, "ProjectionMechanism"},
		{func(c *Config) { c.PrivateScalingShare = 2 }, "PrivateScalingShare"},
		{func(c *Config) { c.ExactAnswersMaxRows = -1 }, "ExactAnswersMaxRows"},
		{func(c *Config) {
			c.Output = curator.OutputPrivacy{Mechanism: "none"}
			c.Evaluation = curator.Evaluation{Mode: curator.EvaluateProgram, Command: []string{"/bin/true"}}
		}, "AllowExactProgramAnswers"},
		{func(c *Config) { c.Limits.Burst = -1 }, "Limits.Burst"},
		{func(c *Config) { c.Ledger.Kind = "postgres" }, "Ledger.DSN"},
		{func(c *Config) { c.Ledger.Kind = "etcd" }, "Ledger.Kind"},
		{func(c *Config) { c.TLS.ClientCAFile = "ca.pem" }, "TLS.ClientCAFile"},
		{func(c *Config) { c.TLS.CertFile = "cert.pem" }, "TLS.KeyFile"},
		{func(c *Config) { c.TLS.KeyFile = "key.pem" }, "TLS.CertFile"},
		{func(c *Config) { c.Listen = "0.0.0.0:0" }, "AllowPlaintext"},
		{func(c *Config) { c.Listen, c.AllowPlaintext = "0.0.0.0:0", true }, "TrustIdentityHeaderFromNetwork"},
		{func(c *Config) { c.AuthFailures.Rate = math.NaN() }, "AuthFailures.Rate"},
		{func(c *Config) { c.AuthFailures.Burst = -1 }, "AuthFailures.Burst"},
		{func(c *Config) { c.AuthFailures.LogInterval = -time.Second }, "AuthFailures.LogInterval"},
		{func(c *Config) { c.MaxHeaderBytes = 100 }, "MaxHeaderBytes"},
	} {
		cfg := base
		tc.edit(&cfg)
		_, err := Check(cfg)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: Check = %v (%#v), want a FieldError on %s", tc.field, err, fe, tc.field)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "Config."+tc.field) && !strings.Contains(msg, "Config.Limits.") || strings.Contains(msg, "--") {
			t.Errorf("%s: message %q should name Config.%s and no flag", tc.field, msg, tc.field)
		}
	}
}
