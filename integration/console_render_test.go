package integration

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/curator"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestConsoleRendersInChromium starts a curator with the operator's console on
// loopback, has two identities answered, and opens the console in headless Chromium
// (findChromium, as the study report's test does): the rendered document must name
// each identity and state the dataset's whole-patient total (GetBudget's figure, to 4
// significant digits), and its screenshot must show the spend chart's blue line.
func TestConsoleRendersInChromium(t *testing.T) {
	chromium := findChromium()
	if chromium == "" {
		t.Skip("no Chromium (neither /usr/bin/chromium nor chromium on PATH): `make deps` (scripts/install-deps.sh) installs Debian's chromium, with which this test renders the console")
	}
	cfg := diabetesConfig(t, t.TempDir())
	cfg.Output = curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 1}
	cfg.ConsoleListen = "127.0.0.1:0"
	cur := startCurator(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var budget *curatorv1.WholePatientBudget
	for i, id := range []string{"vendor-north", "vendor-south"} {
		c := cur.client(t, id)
		if _, err := c.Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{uint64(i), uint64(10 + i)}}); err != nil {
			t.Fatal(err)
		}
		resp, err := c.GetBudget(ctx, &curatorv1.GetBudgetRequest{})
		if err != nil {
			t.Fatal(err)
		}
		budget = resp.GetBudget().GetWholePatient()
	}
	if !budget.GetDatasetBounded() {
		t.Fatalf("the dataset's whole-patient total is not bounded: %v", budget)
	}
	url := "http://" + cur.srv.ConsoleAddr() + "/"
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.CommandContext(ctx, chromium, append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir=" + t.TempDir()}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, stderr.Bytes())
		}
		return stdout.Bytes()
	}
	dom := string(run("--dump-dom", url))
	total := strconv.FormatFloat(budget.GetDatasetEpsilonSpent(), 'g', 4, 64)
	for _, want := range []string{
		"<td>vendor-north</td>", "<td>vendor-south</td>",
		fmt.Sprintf(`<td>dataset (all identities and the curator's own estimates)</td><td class="num">%s</td>`, total),
		"whole-patient ε of the dataset: " + total,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered console lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("rendered console:\n%s", dom)
	}

	shot := filepath.Join(os.TempDir(), "privbo-console-screenshot.png")
	run("--screenshot="+shot, "--window-size=1200,1400", url)
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot does not decode as PNG: %v", err)
	}
	variance, _, blue := pixelStats(img)
	if variance < 100 || blue < 50 {
		t.Errorf("screenshot: luminance variance %.1f, %d blue pixels; want ≥ 100 and ≥ 50 (the page or its chart did not render)", variance, blue)
	}
}
