package main

import (
	"bytes"
	"flag"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/setting"
	"github.com/privbo/privbo/pkg/simulate"
)

// TestFlagRefusals: every numeric flag of `modeler run` and `modeler simulate` refuses
// the values out of its range by name, before anything else happens (no curator is
// dialed, nothing is simulated): a 0 that once stood for a default (--batch 0 meant 1,
// --delta-ucb 0 meant 0.05) is refused, and the zeros whose meaning the usage documents
// are accepted.
func TestFlagRefusals(t *testing.T) {
	tests := []struct {
		command   string
		flag      string
		bad, good []string
	}{
		{"run", "epsilon", []string{"0", "-1", "+Inf"}, []string{"2"}},
		{"run", "delta", []string{"0", "1", "-1e-06"}, []string{"1e-06"}},
		{"run", "iterations", []string{"0", "-3"}, []string{"4"}},
		{"run", "batch", []string{"0", "-1"}, []string{"2"}},
		{"run", "lengthscale", []string{"0", "-1"}, []string{"0.5"}},
		{"run", "signal-variance", []string{"0"}, []string{"1"}},
		{"run", "noise-variance", []string{"0"}, []string{"0.01"}},
		{"run", "fit-every", []string{"-1"}, []string{"0", "5"}},
		{"run", "delta-ucb", []string{"0", "1"}, []string{"0.1"}},
		{"run", "beta", []string{"-1", "NaN"}, []string{"0", "2"}},
		{"run", "initial-index", []string{"-2"}, []string{"-1", "0"}},
		{"run", "timeout", []string{"-1s"}, []string{"0s", "1m0s"}},
		{"run", "confirm-rows", []string{"-1"}, []string{"0", "5"}},
		{"run", "confirm-passes", []string{"0", "-1"}, []string{"1", "3"}},
		{"simulate", "grid", []string{"1", "0"}, []string{"10"}},
		{"simulate", "synthetic-lengthscale", []string{"0"}, []string{"3"}},
		{"simulate", "epsilon", []string{"0"}, []string{"1"}},
		{"simulate", "delta", []string{"0", "1"}, []string{"1e-05"}},
		{"simulate", "output-epsilon", []string{"0", "-1"}, []string{"1"}},
		{"simulate", "output-delta", []string{"1", "-1"}, []string{"0"}},
		{"simulate", "output-lower", []string{"NaN"}, []string{"0"}},
		{"simulate", "output-upper", []string{"+Inf"}, []string{"400"}},
		{"simulate", "iterations", []string{"0"}, []string{"5"}},
		{"simulate", "runs", []string{"0"}, []string{"2"}},
		{"simulate", "batch", []string{"0"}, []string{"1"}},
		{"simulate", "draws", []string{"0"}, []string{"1"}},
		{"simulate", "workers", []string{"0"}, []string{"1"}},
		{"simulate", "lengthscale", []string{"0"}, []string{"1"}},
		{"simulate", "signal-variance", []string{"0"}, []string{"1"}},
		{"simulate", "noise-variance", []string{"0"}, []string{"1"}},
		{"simulate", "delta-ucb", []string{"0"}, []string{"0.05"}},
		{"simulate", "fit-every", []string{"-1"}, []string{"0"}},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.command+" "+tt.flag] = true
		base := []string{"run", "--curator", "127.0.0.1:1", "--identity", "flags", "--timeout", "1ns"}
		if tt.command == "simulate" {
			base = []string{"simulate", "--synthetic", "--out", t.TempDir(), "--quiet", "--runs", "1", "--iterations", "1", "--grid", "2", "--methods", "random"}
		}
		for _, v := range tt.bad {
			want := "--" + tt.flag + " " + v + ": must"
			err := run(append(append([]string{}, base...), "--"+tt.flag, v), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("modeler %s --%s %s: %v, want a refusal containing %q", tt.command, tt.flag, v, err, want)
			}
		}
		for _, v := range tt.good {
			err := run(append(append([]string{}, base...), "--"+tt.flag, v), io.Discard, io.Discard)
			if err != nil && strings.Contains(err.Error(), "--"+tt.flag+" "+v+":") {
				t.Errorf("modeler %s --%s %s refused by its range: %v", tt.command, tt.flag, v, err)
			}
		}
	}
	// Every rule is tested, and every numeric flag has a rule.
	var missing []string
	var o runFlags
	o.register(flag.NewFlagSet("modeler run", flag.ContinueOnError))
	sim := simulate.NewConfig()
	sim.Data, sim.Synthetic = &simulate.DataConfig{}, &simulate.SyntheticConfig{}
	for cmd, rules := range map[string]map[string]any{"run": ranged(o.settings), "simulate": ranged(sim.Bind())} {
		for name := range rules {
			if !covered[cmd+" "+name] {
				missing = append(missing, cmd+" --"+name+" untested")
			}
		}
		var help bytes.Buffer
		run([]string{cmd, "-h"}, &help, &help)
		for _, line := range strings.Split(help.String(), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 || !strings.HasPrefix(f[0], "-") {
				continue
			}
			name := strings.TrimPrefix(f[0], "-")
			switch f[1] {
			case "int", "float", "duration", "uint", "uint64":
				if _, ok := rules[name]; !ok && name != "seed" {
					missing = append(missing, cmd+" --"+name+" has no rule")
				}
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%v", missing)
	}
}

// ranged is the names of the settings of s that have a range.
func ranged(s *setting.Set) map[string]any {
	out := map[string]any{}
	for _, x := range s.All() {
		if x.Ranged() {
			out[x.Name] = nil
		}
	}
	return out
}
