package server

import (
	"context"
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
)

// TestHTTPProbes checks the plain-HTTP probes on the metrics listener, which
// orchestrators use because the gRPC port wants a client certificate: /healthz
// follows the gRPC health status (200 while serving, 503 when not), /livez
// answers 200 while the process is up.
func TestHTTPProbes(t *testing.T) {
	dir := t.TempDir()
	data := smallData(t)
	srv, err := Start(context.Background(), config.Config{
		Listen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0", DataPath: data, Data: dataset.Options{Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleNone}},
		StateDir: filepath.Join(dir, "state"), Budget: ledger.Cost{Epsilon: 1, Delta: 1e-5},
		DatasetID: "probes", Output: curator.OutputPrivacy{Lower: 0, Upper: 5},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + srv.MetricsAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(body))
	}
	for _, c := range []struct {
		path, body string
		code       int
	}{{"/healthz", "SERVING", 200}, {"/livez", "ok", 200}} {
		if code, body := get(c.path); code != c.code || body != c.body {
			t.Errorf("GET %s = %d %q, want %d %q", c.path, code, body, c.code, c.body)
		}
	}
	srv.setServing(false) // as while draining or when the ledger is unreachable
	if code, body := get("/healthz"); code != http.StatusServiceUnavailable || body != "NOT_SERVING" {
		t.Errorf("GET /healthz when not serving = %d %q, want 503 NOT_SERVING", code, body)
	}
	if code, _ := get("/livez"); code != 200 {
		t.Errorf("GET /livez when not serving = %d, want 200", code)
	}
}
