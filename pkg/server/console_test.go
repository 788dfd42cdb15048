package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

func consoleConfig(t *testing.T, listen string) config.Config {
	return config.Config{
		Listen: "127.0.0.1:0", ConsoleListen: listen, DataPath: smallData(t), Data: dataset.Options{Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleNone}},
		StateDir: filepath.Join(t.TempDir(), "state"), Budget: ledger.Cost{Epsilon: 10, Delta: 1e-5},
		DatasetID: "console", Output: curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 1, Lower: 0, Upper: 5},
	}
}

// TestConsoleServes: a curator started with --console-listen on loopback serves the
// operator's page, with the identity that was answered, until it shuts down.
func TestConsoleServes(t *testing.T) {
	srv, err := Start(context.Background(), consoleConfig(t, "127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := transport.Dial(srv.Addr(), transport.ClientConfig{Identity: "vendor-a"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := curatorv1.NewCuratorServiceClient(conn).Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{0, 1}}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + srv.ConsoleAddr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "<td>vendor-a</td>") {
		t.Errorf("GET / = %d, %v; want 200 and a page naming vendor-a:\n%s", resp.StatusCode, err, page)
	}
	addr := srv.ConsoleAddr()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get("http://" + addr + "/"); err == nil {
		resp.Body.Close()
		t.Errorf("after Shutdown the console still answers %d", resp.StatusCode)
	}
}

// TestConsoleOffLoopbackRefused: off loopback without TLS and an operator credential,
// the curator refuses to start, naming --console-listen.
func TestConsoleOffLoopbackRefused(t *testing.T) {
	srv, err := Start(context.Background(), consoleConfig(t, "0.0.0.0:0"))
	if err == nil {
		srv.Shutdown(context.Background())
		t.Fatal("a console on 0.0.0.0 without TLS started")
	}
	var fe *config.FieldError
	if !errors.As(err, &fe) || fe.Field != "console-listen" {
		t.Errorf("Start: %v, want a refusal of --console-listen", err)
	}
}
