package projection

import (
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dp/privacy"
)

// TestParseMechanism: every registered name parses to its mechanism, stated for the
// feature-unit relation; the Gaussian one adds noise and has whole-record figures, the
// lifted one neither; an unknown name is refused with the list of names.
func TestParseMechanism(t *testing.T) {
	for _, tt := range []struct {
		name             string
		noise, baseline  bool
		wholeRecordFails bool
	}{
		{MechanismGaussian, true, false, false},
		{MechanismLifted, false, true, true},
	} {
		m, err := ParseMechanism(tt.name)
		if err != nil {
			t.Fatalf("ParseMechanism(%q): %v", tt.name, err)
		}
		if m.Name() != tt.name || m.AddsNoise() != tt.noise || m.Baseline() != tt.baseline || m.Relation() != privacy.RelationFeatureUnit {
			t.Errorf("%s: name %s, noise %v, baseline %v, relation %s", tt.name, m.Name(), m.AddsNoise(), m.Baseline(), m.Relation())
		}
		if (m.NoWholeRecord() != "") != tt.wholeRecordFails || m.Guarantee(1, 1e-5).Holds() == tt.wholeRecordFails {
			t.Errorf("%s: NoWholeRecord %q, guarantee holds %v", tt.name, m.NoWholeRecord(), m.Guarantee(1, 1e-5).Holds())
		}
		sd, err := m.NoiseSD(100, 5, 3, 1, 1e-5)
		want, _ := NominalNoiseSD(100, 5, 3, 1, 1e-5)
		if !tt.noise {
			want = 0
		}
		if err != nil || sd != want {
			t.Errorf("%s: NoiseSD = %g, %v; want %g", tt.name, sd, err, want)
		}
	}
	if _, err := ParseMechanism("magic"); err == nil || !strings.Contains(err.Error(), "want lifted or gaussian") {
		t.Errorf(`ParseMechanism("magic") = %v, want an error listing the names`, err)
	}
}

// TestWholeRecordReusesTheRelease: the figures stated with a release's own mechanism
// (Report.Noise) are those of one calibrated anew from its dimension and sensitivity.
func TestWholeRecordReusesTheRelease(t *testing.T) {
	x := make([]float64, 40*4)
	for i := range x {
		x[i] = float64(i%7) / 7
	}
	_, rep, err := ProjectGaussian(t.Context(), x, 40, 4, Params{R: 3, Epsilon: 1, Delta: 1e-5}, SeededSource(1), CryptoNoise)
	if err != nil || rep.Noise == nil {
		t.Fatalf("ProjectGaussian: report noise %v, %v", rep.Noise, err)
	}
	dists := []float64{1, 2, 5, 50}
	own, ownRho, err := Gaussian{}.WholeRecord(1, 1e-5, dists, &rep)
	if err != nil {
		t.Fatal(err)
	}
	anew := rep
	anew.Noise = nil
	fresh, freshRho, err := Gaussian{}.WholeRecord(1, 1e-5, dists, &anew)
	if err != nil {
		t.Fatal(err)
	}
	if ownRho != freshRho {
		t.Errorf("ρ with the release's mechanism %g, calibrated anew %g", ownRho, freshRho)
	}
	for i := range own {
		if own[i] != fresh[i] {
			t.Errorf("at %g units: %+v with the release's mechanism, %+v calibrated anew", dists[i], own[i], fresh[i])
		}
	}
}
