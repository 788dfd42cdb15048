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

	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/refusal"
	"github.com/privbo/privbo/pkg/rpc"
	"github.com/privbo/privbo/pkg/storage"
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

// TestDatasetInfoStatesProtection: GetDatasetInfo describes the dataset id, the
// projection's mechanism and relation, and the answers' guarantee; exact-answer
// refusals map to statuses a person can act on.
func TestDatasetInfoStatesProtection(t *testing.T) {
	cfg := config.Config{Listen: "127.0.0.1:0", DataPath: smallData(t), Data: dataset.Options{Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleNone}}, StateDir: t.TempDir(),
		Budget: ledger.Cost{Epsilon: 1, Delta: 1e-5}, DatasetID: "small-v1", DatasetName: "Small", Output: curator.OutputPrivacy{Mechanism: "none"},
		ExactAnswersMaxRows: 2}
	cfg, _, err := cfg.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.LoadCSV(cfg.DataPath, cfg.Data)
	if err != nil {
		t.Fatal(err)
	}
	ds.Name = cfg.DatasetName
	store, err := storage.OpenLedger(context.Background(), cfg.Ledger, cfg.StateDir, ledger.Limits{PerIdentity: cfg.Budget, Dataset: cfg.Budget})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cur, err := curator.New(cfg.Curator(ds, store))
	if err != nil {
		t.Fatal(err)
	}
	h := rpc.New(cur, nil, ledger.Limits{}, rpc.Streams{}, zap.NewNop())
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
	if ei == nil || ei.GetReason() != string(refusal.ExactRowLimit) || ei.GetDomain() != refusal.Domain || !maps.Equal(ei.GetMetadata(), want) {
		t.Errorf("exact query past the cap: ErrorInfo %v, want reason %s, domain %s, metadata %v", ei, refusal.ExactRowLimit, refusal.Domain, want)
	}
}

// TestFieldErrors: each refused setting comes back as a *config.FieldError naming the
// setting at fault (its declared name), and the message names it as its flag.
func TestFieldErrors(t *testing.T) {
	base := config.Config{Listen: "127.0.0.1:0", DataPath: smallData(t), Data: dataset.Options{Target: "y"}, StateDir: t.TempDir(),
		Budget: ledger.Cost{Epsilon: 1, Delta: 1e-5}, DatasetID: "small"}
	for _, tc := range []struct {
		edit  func(*config.Config)
		field string
	}{
		{func(c *config.Config) { c.StateDir = "" }, "state"},
		{func(c *config.Config) { c.DatasetID = "" }, "dataset-id"},
		{func(c *config.Config) { c.DatasetID = "bad\x00id" }, "dataset-id"},
		{func(c *config.Config) { c.Budget = ledger.Cost{} }, "budget-epsilon"},
		{func(c *config.Config) { c.ProjectionMechanism = "magic" }, "projection-mechanism"},
		{func(c *config.Config) { c.PrivateScalingShare = 2 }, "private-scaling-share"},
		{func(c *config.Config) { c.ExactAnswersMaxRows = -1 }, "exact-answers-max-rows"},
		{func(c *config.Config) {
			c.Output = curator.OutputPrivacy{Mechanism: "none"}
			c.Evaluation = curator.Evaluation{Mode: curator.EvaluateProgram, Command: []string{"/bin/true"}}
		}, "allow-exact-program-answers"},
		{func(c *config.Config) { c.Limits.Burst = -1 }, "rate-burst"},
		{func(c *config.Config) { c.Ledger.Kind = "postgres" }, "ledger-dsn"},
		{func(c *config.Config) { c.Ledger.Kind = "etcd" }, "ledger"},
		{func(c *config.Config) { c.TLS.ClientCAFile = "ca.pem" }, "client-ca"},
		{func(c *config.Config) { c.TLS.CertFile = "cert.pem" }, "tls-key"},
		{func(c *config.Config) { c.TLS.KeyFile = "key.pem" }, "tls-cert"},
		{func(c *config.Config) { c.Listen = "0.0.0.0:0" }, "allow-plaintext"},
		{func(c *config.Config) { c.Listen, c.AllowPlaintext = "0.0.0.0:0", true }, "trust-identity-header-from-network"},
		{func(c *config.Config) { c.AuthFailures.Rate = math.NaN() }, "auth-failure-rate"},
		{func(c *config.Config) { c.AuthFailures.Burst = -1 }, "auth-failure-burst"},
		{func(c *config.Config) { c.AuthFailures.LogInterval = -time.Second }, "auth-failure-log-interval"},
		{func(c *config.Config) { c.MaxHeaderBytes = 100 }, "max-header-bytes"},
	} {
		cfg := base
		tc.edit(&cfg)
		_, err := CheckReport(cfg)
		var fe *config.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: Check = %v (%#v), want a FieldError on %s", tc.field, err, fe, tc.field)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "--"+tc.field) || strings.Contains(msg, "Config.") {
			t.Errorf("%s: message %q should name --%s and no Config field", tc.field, msg, tc.field)
		}
	}
}
