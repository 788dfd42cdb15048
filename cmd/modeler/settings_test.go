package main

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/gpucb"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/study"
)

// TestRunFlagsAreNewConfig: `modeler run` without flags gives exactly modeler.NewConfig,
// the one home of a study's defaults, so a default cannot differ between the library
// and the command line.
func TestRunFlagsAreNewConfig(t *testing.T) {
	fs := flag.NewFlagSet("modeler run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o runFlags
	o.register(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if want := modeler.NewConfig(); !reflect.DeepEqual(o.cfg, want) {
		t.Errorf("modeler run's defaults\n%+v\ndiffer from modeler.NewConfig\n%+v", o.cfg, want)
	}
	// And the check can fail: a flag's value reaches the Config it compares.
	if err := fs.Parse([]string{"--kernel", "matern52", "--r", "7"}); err != nil {
		t.Fatal(err)
	}
	if o.cfg.Kernel != gpucb.Matern52 || o.cfg.R != 7 {
		t.Errorf("--kernel matern52 --r 7 gave kernel %v, r %d", o.cfg.Kernel, o.cfg.R)
	}
}

// TestStoredNamesAreFlags: every stored study setting and connection field is stored
// under the name of the `modeler run` flag that sets it (study.Settings' and
// study.Connection's JSON names), so fillFromStudy needs no table; and a Config carried
// through its stored form comes back the same (Config.Settings, ConfigFromSettings),
// every stored field set to a value other than its default.
func TestStoredNamesAreFlags(t *testing.T) {
	vals, err := storedValues(&study.Study{Settings: study.Settings{R: 1},
		Connection: study.Connection{Curator: "a", Identity: "b", CA: "c", Cert: "d", Key: "e", TokenFile: "f", ServerName: "g"}})
	if err != nil {
		t.Fatal(err)
	}
	if n := reflect.TypeFor[study.Settings]().NumField() + reflect.TypeFor[study.Connection]().NumField(); len(vals) != n {
		t.Fatalf("%d stored names for %d fields", len(vals), n)
	}
	fs := flag.NewFlagSet("modeler run", flag.ContinueOnError)
	var o runFlags
	o.register(fs)
	for k := range vals {
		if fs.Lookup(k) == nil {
			t.Errorf("stored setting %q is not a flag of modeler run", k)
		}
	}

	cfg := modeler.Config{R: 3, Epsilon: 2, Delta: 1e-5, Label: "x", Iterations: 9, Batch: 2, Kernel: gpucb.Matern52,
		Lengthscale: 0.5, SignalVariance: 2, NoiseVariance: 0.1, FitEvery: 4, DeltaUCB: 0.1, ConstantBeta: 3,
		AllowRepeats: true, RawOutputs: true, InitialIndex: 5, Direction: study.Minimize,
		ProjectionNoise: modeler.ProjectionNoiseIgnore, Clip: modeler.Clip{Lower: 1, Upper: 2},
		RecommendLikelihood: modeler.LikelihoodGaussian}
	set, err := cfg.Settings()
	if err != nil {
		t.Fatal(err)
	}
	sv, def := reflect.ValueOf(set), reflect.ValueOf(study.Settings{})
	for k := range sv.NumField() {
		if sv.Field(k).Equal(def.Field(k)) {
			t.Errorf("stored setting %s is its zero value: Config.Settings does not carry it, or the test's Config does not set it", sv.Type().Field(k).Name)
		}
	}
	back, err := modeler.ConfigFromSettings(set)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, cfg) {
		t.Errorf("through its stored form, %+v came back as %+v", cfg, back)
	}
	// Filling a command line from the stored names gives the same settings.
	var filled runFlags
	fs = flag.NewFlagSet("modeler run", flag.ContinueOnError)
	filled.register(fs)
	for k, v := range set.Named() {
		if err := fs.Set(k, v); err != nil {
			t.Fatalf("--%s %s: %v", k, v, err)
		}
	}
	if got, err := filled.cfg.Settings(); err != nil || got != set {
		t.Errorf("settings filled by name = %+v, %v; want %+v", got, err, set)
	}
	if strings.Contains(set.Kernel, "Kernel(") {
		t.Errorf("kernel stored as %q", set.Kernel)
	}
}
