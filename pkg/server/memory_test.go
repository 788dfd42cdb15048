package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
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
	"github.com/privbo/privbo/pkg/projection"
	"github.com/privbo/privbo/pkg/refusal"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestMemoryConfig: the memory settings are checked before anything is loaded, and the
// default release memory is the documented share of the limit.
func TestMemoryConfig(t *testing.T) {
	base := config.Config{Listen: "127.0.0.1:0", DataPath: smallData(t), Data: dataset.Options{Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleNone}}, StateDir: t.TempDir(),
		Budget: ledger.Cost{Epsilon: 1, Delta: 1e-5}, DatasetID: "small", Output: curator.OutputPrivacy{Lower: 0, Upper: 5}}
	for _, tc := range []struct {
		name        string
		limit, rel  int64
		field, want string
	}{
		{"negative limit", -1, 0, "memory-limit", "--memory-limit -1: must be at least 128MiB"},
		{"release memory below the minimum", 0, curator.MinMemory - 1, "release-memory", "must be at least 16MiB"},
		{"release memory above the limit", 1 << 30, 2 << 30, "release-memory", "exceeds --memory-limit"},
		{"both", 2 << 30, 1 << 30, "", ""},
		{"defaults", 0, 0, "", ""},
	} {
		cfg := base
		cfg.MemoryLimit, cfg.ReleaseMemory = tc.limit, tc.rel
		_, _, err := cfg.Resolve()
		var fe *config.FieldError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: Resolve: %v", tc.name, err)
		case tc.want != "" && (!asFieldError(err, &fe) || fe.Field != tc.field || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: Resolve: %v, want a FieldError on %s containing %q", tc.name, err, tc.field, tc.want)
		}
	}
	for _, tc := range []struct {
		limit, data, want int64
	}{
		{2 << 30, 168_000_000, 3<<29 - 168_000_000 - RuntimeReserve},
		{256 << 20, 0, 192<<20 - RuntimeReserve},
		{128 << 20, 100 << 20, curator.MinMemory}, // the dataset leaves too little: the minimum
	} {
		if got := DefaultReleaseMemory(tc.limit, tc.data); got != tc.want {
			t.Errorf("DefaultReleaseMemory(%d, %d) = %d, want %d", tc.limit, tc.data, got, tc.want)
		}
	}
	if got, want := DatasetMemory(1_000_000, 10), int64(168_000_000); got != want {
		t.Errorf("DatasetMemory(10⁶, 10) = %d, want %d", got, want)
	}
	cfg := base
	cfg.MemoryLimit, cfg.ReleaseMemory = 2<<30, 24<<20
	if rep, err := CheckReport(cfg); err != nil || !strings.Contains(rep.Summary, "memory limit 2048 MiB (--memory-limit), releases 24 MiB at once") {
		t.Errorf("CheckReport = %q, %v; want the memory limit and the releases' memory", rep.Summary, err)
	}
	if got, want := RuntimeMemoryLimit(2<<30), int64(1932735283); got != want {
		t.Errorf("RuntimeMemoryLimit(2 GiB) = %d, want %d", got, want)
	}
}

func asFieldError(err error, fe **config.FieldError) bool { return errors.As(err, fe) }

// TestReleaseMemoryOverTheWire: a curator admitting 24 MiB of releases at once refuses
// r = 1024 under the lifted mechanism (its 1024×1024 working matrices alone take more)
// as RESOURCE_EXHAUSTED with reason MEMORY_LIMIT and the numbers, serves the largest r
// it names, and reports its memory budget as metrics. With only a memory limit, the
// release memory is the documented share of it less the dataset.
func TestReleaseMemoryOverTheWire(t *testing.T) {
	const releaseMemory = 24 << 20
	srv, err := Start(context.Background(), config.Config{
		Listen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0", DataPath: smallData(t), Data: dataset.Options{Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleNone}},
		StateDir: t.TempDir(), Budget: ledger.Cost{Epsilon: 10, Delta: 1e-3}, DatasetID: "memory",
		Output: curator.OutputPrivacy{Lower: 0, Upper: 5}, ProjectionMechanism: projection.MechanismLifted,
		ReleaseMemory: releaseMemory,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	if got := srv.ReleaseMemory(); got != releaseMemory {
		t.Errorf("ReleaseMemory() = %d, want %d", got, releaseMemory)
	}
	conn, err := transport.Dial(srv.Addr(), transport.ClientConfig{Identity: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := curatorv1.NewCuratorServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fetch := func(r uint32) (int, error) {
		stream, err := client.ReleaseProjection(ctx, &curatorv1.ReleaseProjectionRequest{Dimension: r, Epsilon: 1, Delta: 1e-5})
		if err != nil {
			return 0, err
		}
		n := 0
		for {
			msg, err := stream.Recv()
			if err == io.EOF {
				return n, nil
			}
			if err != nil {
				return n, err
			}
			n += len(msg.GetChunk().GetData())
		}
	}
	_, err = fetch(1024)
	st := status.Convert(err)
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			info = ei
		}
	}
	if st.Code() != codes.ResourceExhausted || info.GetReason() != string(refusal.MemoryLimit) || info.GetDomain() != refusal.Domain {
		t.Fatalf("r = 1024: %v, want RESOURCE_EXHAUSTED with reason %s", err, refusal.MemoryLimit)
	}
	meta := info.GetMetadata()
	maxR, _ := strconv.Atoi(meta["max_dimension"])
	needed, _ := strconv.ParseInt(meta["needed_bytes"], 10, 64)
	if meta["available_bytes"] != strconv.Itoa(releaseMemory) || needed <= releaseMemory || maxR < 2 || maxR >= 1024 {
		t.Errorf("MEMORY_LIMIT metadata %v", meta)
	}
	if !strings.Contains(st.Message(), "ask for r ≤ "+meta["max_dimension"]) || strings.Contains(st.Message(), "--") || strings.Contains(st.Message(), "Config.") {
		t.Errorf("refusal %q: want 'ask for r ≤ %d' and none of the curator's settings", st.Message(), maxR)
	}
	n, err := fetch(uint32(maxR))
	if err != nil || n != 8*20*maxR {
		t.Errorf("r = %d: %d bytes, %v; want %d", maxR, n, err, 8*20*maxR)
	}

	resp, err := http.Get("http://" + srv.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"privbo_release_memory_limit_bytes 2.5165824e+07", "privbo_release_memory_held_bytes 0", "privbo_release_memory_waiting 0"} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}

	// A memory limit alone: the release memory derives from it.
	srv2, err := Start(context.Background(), config.Config{
		Listen: "127.0.0.1:0", DataPath: smallData(t), Data: dataset.Options{Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleNone}},
		StateDir: filepath.Join(t.TempDir(), "s"), Budget: ledger.Cost{Epsilon: 10, Delta: 1e-3}, DatasetID: "memory",
		Output: curator.OutputPrivacy{Lower: 0, Upper: 5}, MemoryLimit: 1 << 30,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Shutdown(context.Background())
	if got, want := srv2.ReleaseMemory(), DefaultReleaseMemory(1<<30, DatasetMemory(20, 2)); got != want {
		t.Errorf("ReleaseMemory() with a 1 GiB limit = %d, want %d", got, want)
	}
}
