package main

import (
	"flag"
	"os"
	"sort"
	"strings"
	"testing"
)

// TestServeFlagRefusals: every numeric flag of serve refuses the values out of its
// range, naming the flag and the value, whether given on the command line, in the
// configuration file or in the environment; a 0 that once stood for a default
// (--output-epsilon 0 meant 1) is refused, and the zeros whose meaning the usage
// documents are accepted.
func TestServeFlagRefusals(t *testing.T) {
	good := writeConfig(t, `data = "`+diabetes+`"
target = "progression"
state = "`+t.TempDir()+`"
budget-epsilon = 10
dataset-id = "diabetes-2024"
output-lower = 0
output-upper = 400
`)
	tests := []struct {
		flag      string
		bad, good []string
	}{
		{"budget-epsilon", []string{"0", "-1", "+Inf"}, []string{"2"}},
		{"budget-delta", []string{"-1e-06", "1"}, []string{"0", "1e-5"}},
		{"dataset-budget-epsilon", []string{"0", "-3"}, []string{"30"}},
		{"dataset-budget-delta", []string{"0", "1"}, []string{"1e-5"}},
		{"patient-budget-epsilon", []string{"-1", "+Inf", "NaN"}, []string{"0", "10"}},
		{"patient-budget-delta", []string{"-1e-06", "1"}, []string{"0", "1e-5"}},
		{"patient-dataset-budget-epsilon", []string{"-1", "+Inf"}, []string{"0", "20"}},
		{"patient-dataset-budget-delta", []string{"-1", "1"}, []string{"0", "1e-5"}},
		{"private-scaling-share", []string{"0", "1", "-0.1"}, []string{"0.2"}},
		{"noise-sd", []string{"-1", "NaN"}, []string{"0", "2"}},
		{"evaluate-timeout", []string{"0s", "-1s"}, []string{"5s"}},
		{"output-epsilon", []string{"0", "-1", "+Inf"}, []string{"0.5"}},
		{"output-delta", []string{"-1e-09", "1"}, []string{"0"}},
		{"output-lower", []string{"NaN", "-Inf"}, []string{"-10"}},
		{"output-upper", []string{"+Inf"}, []string{"500"}},
		{"study-epsilon", []string{"0", "-1"}, []string{"2"}},
		{"study-delta", []string{"0", "1"}, []string{"1e-7"}},
		{"exact-answers-max-rows", []string{"0", "-5"}, []string{"10"}},
		{"max-query-indices", []string{"0"}, []string{"5"}},
		{"max-projection-dim", []string{"0", "-1"}, []string{"20"}},
		{"shutdown-timeout", []string{"0s", "-2s"}, []string{"1s"}},
		{"ledger-timeout", []string{"0s", "-1s"}, []string{"3s"}},
		{"rate-limit", []string{"-1"}, []string{"0", "5"}},
		{"rate-burst", []string{"0", "-1"}, []string{"3"}},
		{"max-in-flight", []string{"-1"}, []string{"0", "4"}},
		{"max-streams-per-identity", []string{"0", "-1"}, []string{"1", "16"}},
		{"stream-idle-timeout", []string{"0s", "-1s"}, []string{"1s", "5m"}},
		{"job-validation-fraction", []string{"0", "1"}, []string{"0.25"}},
		{"evaluator-timeout", []string{"0s"}, []string{"1m"}},
		{"max-job-grid", []string{"0"}, []string{"10"}},
		{"max-job-iterations", []string{"0"}, []string{"10"}},
		{"max-running-jobs", []string{"0"}, []string{"2"}},
		{"job-lease", []string{"0s", "500ms", "-1s"}, []string{"1s", "30s"}},
		{"kusner-k1", []string{"-0.1", "1"}, []string{"0", "0.5"}},
		{"kusner-noise-variance", []string{"0"}, []string{"0.1"}},
		{"kusner-gamma-t", []string{"-1"}, []string{"0", "3"}},
		{"kusner-a", []string{"-1"}, []string{"0", "1"}},
		{"kusner-tau", []string{"-1"}, []string{"0", "1"}},
		{"job-bounds-epsilon", []string{"-1"}, []string{"0", "0.5"}},
		{"job-classes", []string{"1", "-2"}, []string{"0", "2", "10"}},
		{"auth-failure-rate", []string{"0", "NaN", "+Inf"}, []string{"-1", "2"}},
		{"auth-failure-burst", []string{"0", "-1"}, []string{"1", "20"}},
		{"auth-failures-logged", []string{"0"}, []string{"3"}},
		{"auth-failure-log-interval", []string{"0s", "-1s"}, []string{"30s"}},
		{"auth-failure-peers", []string{"0"}, []string{"100"}},
		{"max-header-bytes", []string{"-1", "1023"}, []string{"1024", "65536"}},
		{"memory-limit", []string{"0", "-1GiB", "100MiB"}, []string{"2GiB", "4294967296"}},
		{"release-memory", []string{"0", "15MiB"}, []string{"16MiB", "1.5GiB"}},
		{"stored-bytes-per-identity", []string{"0", "63KiB", "-1"}, []string{"64KiB", "2GiB"}},
		{"stored-bytes-per-dataset", []string{"0", "60KiB"}, []string{"1MiB", "1TiB"}},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.flag] = true
		for _, v := range tt.bad {
			want := "--" + tt.flag + " " + v + ": must"
			err := run([]string{"check-config", "--config", good, "--" + tt.flag, v})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("check-config --%s %s: %v, want a refusal containing %q", tt.flag, v, err, want)
			}
			// The same value from the environment is refused alike.
			env := "PRIVBO_CURATOR_" + strings.ToUpper(strings.ReplaceAll(tt.flag, "-", "_"))
			t.Setenv(env, v)
			if err := run([]string{"check-config", "--config", good}); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("check-config with %s=%s in the environment: %v, want a refusal containing %q", tt.flag, v, err, want)
			}
			os.Unsetenv(env)
		}
		for _, v := range tt.good {
			if err := run([]string{"check-config", "--config", good, "--" + tt.flag, v}); err != nil && strings.Contains(err.Error(), "--"+tt.flag+" "+v+":") {
				t.Errorf("check-config --%s %s refused by its range: %v", tt.flag, v, err)
			}
		}
	}
	// Every rule is tested, and every numeric flag of serve has a rule.
	var missing []string
	f := &serveFlags{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	f.register(fs)
	ranged := map[string]bool{}
	for _, s := range f.settings.All() {
		if ranged[s.Name] = s.Ranged(); s.Ranged() && !covered[s.Name] {
			missing = append(missing, s.Name)
		}
	}
	fs.VisitAll(func(fl *flag.Flag) {
		switch fl.Value.(type) {
		case flag.Getter:
			if _, isNum := fl.Value.(flag.Getter).Get().(string); isNum {
				return
			}
			if _, isBool := fl.Value.(flag.Getter).Get().(bool); isBool {
				return
			}
			if !ranged[fl.Name] && fl.Name != "job-split-seed" {
				missing = append(missing, "no rule for --"+fl.Name)
			}
		}
	})
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("rules and flags without a test or a rule: %v", missing)
	}
}
