package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestRunRAuto runs `modeler run --r auto --json` against the diabetes curator (d = 10,
// Gaussian projection mechanism) and checks that the r the curator chose is reported in
// its quote on stderr, on stdout and in the JSON (r and r_auto), with the projection's
// noise sd, and that a bad --r (a word, 0) or --projection-noise is refused.
func TestRunRAuto(t *testing.T) {
	srv := startDiabetesCurator(t)
	var stdout, stderr bytes.Buffer
	err := run([]string{"run", "--curator", srv.Addr(), "--identity", "auto-test", "--r", "auto", "--epsilon", "7.38905609893065",
		"--delta", "1e-4", "--iterations", "6", "--json", "--quiet"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var res struct {
		R     int `json:"r"`
		RAuto *struct {
			R       int     `json:"r"`
			NoiseSD float64 `json:"noise_sd"`
		} `json:"r_auto"`
		ProjectionNoiseSD  float64 `json:"projection_noise_sd"`
		ProjectionNoise    string  `json:"projection_noise"`
		InputNoiseVariance float64 `json:"input_noise_variance"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line of stdout is not JSON: %v\n%s", err, stdout.String())
	}
	// AutoR's σ is the curator's up to the rounding of ‖M‖₂ (computed by an SVD there).
	if res.R != 10 || res.RAuto == nil || res.RAuto.R != 10 || math.Abs(res.RAuto.NoiseSD-res.ProjectionNoiseSD) > 1e-9*res.ProjectionNoiseSD ||
		!(res.ProjectionNoiseSD > 0) || res.ProjectionNoise != "model" || res.InputNoiseVariance != res.ProjectionNoiseSD*res.ProjectionNoiseSD {
		t.Errorf("JSON = %+v (r_auto %+v); want r = 10 chosen by auto, its σ the release's, modelled", res, res.RAuto)
	}
	if !strings.Contains(stderr.String(), "r=10 (chosen by the curator") || !strings.Contains(stdout.String(), "r = 10 chosen by --r auto") ||
		!strings.Contains(stdout.String(), "projection noise: sd") {
		t.Errorf("r auto or the projection noise not reported:\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	for _, args := range [][]string{{"--r", "ten"}, {"--r", "0"}, {"--r", "-2"}, {"--projection-noise", "maybe"}} {
		if err := run(append([]string{"run", "--curator", srv.Addr(), "--iterations", "3"}, args...), &stdout, &stderr); err == nil {
			t.Errorf("run %v: no error", args)
		}
	}
}
