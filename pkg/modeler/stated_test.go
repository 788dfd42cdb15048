package modeler

import (
	"testing"

	"github.com/privbo/privbo/pkg/study"
	"github.com/privbo/privbo/pkg/study/calibrate"
)

// stated is op with the answers' noise stated, as a curator states it on the wire
// (calibrate.Noise: Laplace sd √2·(U − L)/ε, the analytic Gaussian σ, exact none), for
// the fake curators of these tests. A settings error fails the test: a fake that means
// to state bad settings builds its OutputPrivacy by hand.
func stated(t testing.TB, op study.OutputPrivacy) study.OutputPrivacy {
	t.Helper()
	if err := calibrate.Noise(&op); err != nil {
		t.Fatal(err)
	}
	return op
}

// mustStated is stated for fakes without a testing.TB: it panics on bad settings.
func mustStated(op study.OutputPrivacy) study.OutputPrivacy {
	if err := calibrate.Noise(&op); err != nil {
		panic(err)
	}
	return op
}
