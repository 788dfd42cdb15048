package rpc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// fuzzHandlers builds the handlers over a 30-row dataset with a tiny budget, so fuzzed
// requests exercise validation, refusals and real releases.
func fuzzHandlers(f *testing.F) *handlers {
	dir := f.TempDir()
	var b strings.Builder
	b.WriteString("a,b,c,y\n")
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&b, "%d,%d,%d,%d\n", i, (i*7)%11, (i*i)%13, i%5)
	}
	path := filepath.Join(dir, "d.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		f.Fatal(err)
	}
	ds, err := dataset.LoadCSV(path, dataset.Options{Target: "y"})
	if err != nil {
		f.Fatal(err)
	}
	led, err := ledger.OpenSQLite(filepath.Join(dir, "ledger.db"), ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 3, Delta: 0.01}, Dataset: ledger.Cost{Epsilon: 3, Delta: 0.01}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { led.Close() })
	cur, err := curator.New(curator.Config{Dataset: ds, Ledger: led, StateDir: dir, MaxProjectionDim: 64,
		Output: curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 0.01, Lower: 0, Upper: 5}})
	if err != nil {
		f.Fatal(err)
	}
	return New(cur, nil, ledger.Limits{}, Streams{}, zap.NewNop()).(*handlers)
}

// allowed are the codes a fuzzed request may get; anything else (Internal above all)
// is a bug.
func checkCode(t *testing.T, what string, err error) {
	switch status.Code(err) {
	case codes.OK, codes.InvalidArgument, codes.ResourceExhausted:
	default:
		t.Fatalf("%s: unexpected %v", what, err)
	}
}

type discardStream struct {
	curatorv1.CuratorService_ReleaseProjectionServer
	ctx context.Context
}

func (d discardStream) Context() context.Context                      { return d.ctx }
func (discardStream) Send(*curatorv1.ReleaseProjectionResponse) error { return nil }
func (discardStream) SetHeader(metadata.MD) error                     { return nil }

func FuzzRequests(f *testing.F) {
	h := fuzzHandlers(f)
	seed := func(m proto.Message) []byte { b, _ := proto.Marshal(m); return b }
	f.Add(byte(0), seed(&curatorv1.QueryRequest{Indices: []uint64{0, 3, 3, 29}}))
	f.Add(byte(0), seed(&curatorv1.QueryRequest{Indices: []uint64{30, 1 << 40}}))
	f.Add(byte(1), seed(&curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 1, Delta: 1e-5, Label: "x"}))
	f.Add(byte(1), seed(&curatorv1.ReleaseProjectionRequest{Dimension: 1 << 31, Epsilon: -1, Delta: 2}))
	f.Fuzz(func(t *testing.T, kind byte, data []byte) {
		ctx := transport.WithIdentity(context.Background(), "fuzzer")
		switch kind % 2 {
		case 0:
			req := &curatorv1.QueryRequest{}
			if proto.Unmarshal(data, req) != nil {
				return
			}
			if len(req.Indices) > 64 {
				req.Indices = req.Indices[:64]
			}
			resp, err := h.Query(ctx, req)
			checkCode(t, "Query", err)
			if err == nil && len(resp.GetObservations()) != len(req.GetIndices()) {
				t.Fatalf("Query answered %d observations for %d indices", len(resp.GetObservations()), len(req.GetIndices()))
			}
		case 1:
			req := &curatorv1.ReleaseProjectionRequest{}
			if proto.Unmarshal(data, req) != nil {
				return
			}
			checkCode(t, "ReleaseProjection", h.ReleaseProjection(req, discardStream{ctx: ctx}))
		}
	})
}
