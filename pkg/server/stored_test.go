package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/refusal"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// storedData writes a table of 200 rows and 8 features: a projection at r = 8
// stores 12,800 bytes.
func storedData(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("a,b,c,d,e,f,g,h,y\n")
	for i := range 200 {
		for j := range 8 {
			fmt.Fprintf(&b, "%d,", (i*(j+3))%17)
		}
		fmt.Fprintf(&b, "%d\n", i%5)
	}
	path := filepath.Join(t.TempDir(), "d.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStoredBytesQuota (issue 31): 200 distinct near-free releases by one identity stop
// at its stored-bytes quota of 64 KiB — 5 releases of 12,800 bytes, then
// RESOURCE_EXHAUSTED with reason STORED_BYTES and the figures — for ε = 0.002 of its ε = 2
// budget, and nothing else is refused because of them: its replays and answers, and
// another identity's release. The metrics and the ledger state the bytes.
func TestStoredBytesQuota(t *testing.T) {
	const quota, release = 64 << 10, 8 * 200 * 8
	srv, err := Start(context.Background(), config.Config{
		Listen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0", DataPath: storedData(t), Data: dataset.Options{Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleNone}},
		StateDir: t.TempDir(), Budget: ledger.Cost{Epsilon: 2, Delta: 1e-3}, DatasetBudget: ledger.Cost{Epsilon: 4, Delta: 1e-3}, DatasetID: "stored",
		Output: curator.OutputPrivacy{Lower: 0, Upper: 5}, StoredBytesPerIdentity: quota, StoredBytesPerDataset: 4 * quota,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := func(identity string) curatorv1.CuratorServiceClient {
		conn, err := transport.Dial(srv.Addr(), transport.ClientConfig{Identity: identity})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return curatorv1.NewCuratorServiceClient(conn)
	}
	acme, bob := client("acme"), client("bob")
	fetch := func(c curatorv1.CuratorServiceClient, label string) error {
		stream, err := c.ReleaseProjection(ctx, &curatorv1.ReleaseProjectionRequest{Dimension: 8, Epsilon: 1e-5, Delta: 1e-8, Label: label})
		if err != nil {
			return err
		}
		for {
			if _, err := stream.Recv(); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
		}
	}
	made, refused := 0, 0
	var last error
	for i := range 200 {
		switch err := fetch(acme, fmt.Sprint("try ", i)); {
		case err == nil && refused == 0:
			made++
		case err == nil:
			t.Fatalf("release %d made after %d were refused", i, refused)
		default:
			refused, last = refused+1, err
		}
	}
	if made != quota/release || refused != 200-made {
		t.Fatalf("%d releases made, %d refused; want %d, then every other refused (last: %v)", made, refused, quota/release, last)
	}
	st := status.Convert(last)
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			info = ei
		}
	}
	want := map[string]string{"scope": "identity", "requested_bytes": fmt.Sprint(release), "stored_bytes": fmt.Sprint(made * release),
		"reserved_bytes": "0", "quota_bytes": fmt.Sprint(quota)}
	if st.Code() != codes.ResourceExhausted || info.GetReason() != string(refusal.StoredBytes) || fmt.Sprint(info.GetMetadata()) != fmt.Sprint(want) {
		t.Errorf("past the quota: %v, metadata %v; want RESOURCE_EXHAUSTED, reason %s, %v", last, info.GetMetadata(), refusal.StoredBytes, want)
	}
	if msg := st.Message(); !strings.Contains(msg, "stored-bytes quota reached for identity \"acme\"") || !strings.Contains(msg, "quota of 64 KiB") ||
		!strings.Contains(msg, "replayed at no cost") || strings.Contains(msg, "--") {
		t.Errorf("refusal %q: want the quota, its figures and that replays work, and no flag", msg)
	}
	if err := fetch(acme, "try 0"); err != nil {
		t.Errorf("a replay past the quota: %v", err)
	}
	if _, err := acme.Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{0, 1, 2}}); err != nil {
		t.Errorf("answers past the quota: %v", err)
	}
	if err := fetch(bob, "bob"); err != nil {
		t.Errorf("another identity's release: %v", err)
	}

	rows, err := srv.ledger.Stored(ctx, "stored")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(rows), fmt.Sprintf("[{ %d %d 0} {acme %d %d 0} {bob %d 1 0}]", (made+1)*release, made+1, made*release, made, release); got != want {
		t.Errorf("ledger Stored = %s, want %s", got, want)
	}
	resp, err := http.Get("http://" + srv.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`privbo_stored_bytes{dataset="stored",identity="acme"} 64000`,
		`privbo_stored_releases{dataset="stored",identity=""} 6`,
		`privbo_stored_bytes_quota_identity{dataset="stored"} 65536`,
		`privbo_stored_bytes_quota_dataset{dataset="stored"} 262144`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}
