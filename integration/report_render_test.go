package integration

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/study"
)

// findChromium returns Debian's /usr/bin/chromium (what scripts/install-deps.sh, run by
// `make deps` and `make test`, installs) or else a chromium on PATH, or "" if there is
// none.
func findChromium() string {
	for _, name := range []string{"/usr/bin/chromium", "chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// screenshotPath is where the test leaves its screenshot (t.TempDir is deleted).
var screenshotPath = filepath.Join(os.TempDir(), "privbo-report-screenshot.png")

// TestReportRendersInChromium runs a batch study to the end, writes its report (the
// recommended row first) and opens it in headless Chromium (offline: the page must be self-contained). The screenshot must
// decode, not be blank (luminance variance), and show the plots' colours — the red
// running-best line and the blue answers exist only in the embedded PNGs. Without a
// Chromium it skips, saying how to install one.
func TestReportRendersInChromium(t *testing.T) {
	chromium := findChromium()
	if chromium == "" {
		t.Skip("no Chromium (neither /usr/bin/chromium nor chromium on PATH): `make deps` (scripts/install-deps.sh) installs Debian's chromium, with which this test renders the report")
	}
	t.Logf("rendering with %s", chromium)
	// The curator's default answers: Laplace at ε = 1 on the schema's range [0, 400].
	ccfg := diabetesConfig(t, t.TempDir())
	ccfg.Output = curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 1}
	cur := startCurator(t, ccfg)
	ctx := context.Background()
	store, err := study.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg := studySettings
	cfg.Batch = 5
	conn := study.Connection{Curator: cur.srv.Addr(), Identity: "vendor-report"}
	if _, err := modeler.RunStudy(ctx, curatorclient.New(cur.client(t, "vendor-report")), store, "diabetes-q5", conn, cfg); err != nil {
		t.Fatal(err)
	}
	if err := store.SetKnownBest(ctx, "diabetes-q5", slices.Max(loadDiabetes(t).Y)); err != nil {
		t.Fatal(err)
	}
	st, err := store.Get(ctx, "diabetes-q5")
	if err != nil {
		t.Fatal(err)
	}
	obs, err := store.Observations(ctx, "diabetes-q5")
	if err != nil {
		t.Fatal(err)
	}
	res, err := modeler.Replay(store, st, obs)
	if err != nil {
		t.Fatal(err)
	}
	page, err := study.WriteReport(st, obs, res.Recommendation(), filepath.Join(t.TempDir(), "report"))
	if err != nil {
		t.Fatal(err)
	}
	// The page leads with the recommended row (before the highest noisy answer), as the
	// browser shows it below.
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	rec := bytes.Index(html, []byte(fmt.Sprintf(`recommended row (highest posterior mean)</div><div class="v">%d</div>`, res.Recommended)))
	if noisy := bytes.Index(html, []byte("highest noisy answer</div>")); rec < 0 || noisy < 0 || rec > noisy {
		t.Errorf("report shows the recommended row %d at byte %d and the highest noisy answer at %d; want the recommended row first", res.Recommended, rec, noisy)
	}

	shot := filepath.Join(t.TempDir(), "shot.png")
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+t.TempDir(),
		"--screenshot="+shot, "--window-size=1200,1600", "file://"+page)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	if err := os.WriteFile(screenshotPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of %s: %s", page, screenshotPath)
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot does not decode as PNG: %v", err)
	}
	if got := img.Bounds().Size(); got != (image.Point{1200, 1600}) {
		t.Errorf("screenshot is %v, want 1200 × 1600", got)
	}
	variance, red, blue := pixelStats(img)
	// A blank page has variance 0; text and plots on white give thousands (8-bit units²).
	if variance < 100 {
		t.Errorf("screenshot luminance variance = %.1f, want ≥ 100 (the page looks blank)", variance)
	}
	if red < 50 || blue < 50 {
		t.Errorf("screenshot has %d red and %d blue pixels, want ≥ 50 of each (the embedded plots did not render)", red, blue)
	}
}

// pixelStats returns the variance of the luminance (0–255) and the number of pixels close
// to the plots' red (#d62728) and blue (#1f77b4).
func pixelStats(img image.Image) (variance float64, red, blue int) {
	near := func(r, g, b, cr, cg, cb float64) bool {
		return math.Abs(r-cr) < 40 && math.Abs(g-cg) < 40 && math.Abs(b-cb) < 40
	}
	var sum, sum2 float64
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			r16, g16, b16, _ := img.At(x, y).RGBA()
			r, g, b := float64(r16>>8), float64(g16>>8), float64(b16>>8)
			l := 0.2126*r + 0.7152*g + 0.0722*b
			sum += l
			sum2 += l * l
			if near(r, g, b, 0xd6, 0x27, 0x28) {
				red++
			}
			if near(r, g, b, 0x1f, 0x77, 0xb4) {
				blue++
			}
		}
	}
	n := float64(bd.Dx() * bd.Dy())
	m := sum / n
	return sum2/n - m*m, red, blue
}
