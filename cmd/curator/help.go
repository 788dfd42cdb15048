package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// serveSections groups serve's flags for -h, as etcd's help does: what must be given,
// then the data, privacy, identity, jobs, limits and operations. TestServeSections
// checks that every flag is in exactly one section.
var serveSections = []struct {
	title string
	flags []string
}{
	{"Required", []string{"data", "target", "dataset-id", "state", "budget-epsilon"}},
	{"Data and scaling", []string{"features", "exclude", "missing-markers", "scaling", "schema", "private-scaling-share", "estimate-target-range", "name",
		"evaluate", "evaluate-program", "evaluate-timeout", "noise-sd"}},
	{"Privacy and budget", []string{"projection-mechanism", "output-privacy", "output-epsilon", "output-delta", "output-lower", "output-upper",
		"budget-delta", "dataset-budget-epsilon", "dataset-budget-delta", "patient-budget-epsilon", "patient-budget-delta",
		"patient-dataset-budget-epsilon", "patient-dataset-budget-delta", "change-limits", "study-epsilon", "study-delta",
		"exact-answers-max-rows", "allow-exact-program-answers", "ledger", "ledger-dsn", "ledger-schema", "ledger-timeout"}},
	{"TLS and identity", []string{"listen", "tls-cert", "tls-key", "client-ca", "tokens", "allow-plaintext", "trust-identity-header-from-network",
		"auth-failure-rate", "auth-failure-burst", "auth-failures-logged", "auth-failure-log-interval", "auth-failure-peers"}},
	{"Jobs", []string{"jobs", "job-validation-fraction", "job-split-seed", "job-classes", "job-preprocessing", "job-bounds-epsilon",
		"job-training-consented", "evaluators", "evaluator-epsilons", "evaluator-rdp", "evaluator-timeout", "max-job-grid",
		"max-job-iterations", "max-running-jobs", "job-lease", "kusner-k1", "kusner-noise-variance", "kusner-gamma-t", "kusner-a", "kusner-tau"}},
	{"Limits", []string{"max-query-indices", "max-projection-dim", "memory-limit", "release-memory", "stored-bytes-per-identity", "stored-bytes-per-dataset", "rate-limit", "rate-burst",
		"max-in-flight", "max-streams-per-identity", "stream-idle-timeout", "max-header-bytes"}},
	{"Operations", []string{"config", "addr-file", "metrics-listen", "console-listen", "console-operators", "shutdown-timeout", "log-level", "log-format"}},
}

// groupedUsage prints fs's flags by section, each as the flag package prints it.
func groupedUsage(fs *flag.FlagSet, sections []struct {
	title string
	flags []string
}) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage of %s:\n", fs.Name())
		for _, s := range sections {
			fmt.Fprintf(w, "\n%s:\n", s.title)
			for _, name := range s.flags {
				if f := fs.Lookup(name); f != nil {
					printFlag(w, f)
				}
			}
		}
	}
}

// printFlag prints f as flag.PrintDefaults does.
func printFlag(w io.Writer, f *flag.Flag) {
	var b strings.Builder
	fmt.Fprintf(&b, "  -%s", f.Name)
	name, usage := flag.UnquoteUsage(f)
	if name != "" {
		b.WriteString(" " + name)
	}
	if b.Len() <= 4 {
		b.WriteString("\t")
	} else {
		b.WriteString("\n    \t")
	}
	b.WriteString(strings.ReplaceAll(usage, "\n", "\n    \t"))
	switch f.DefValue {
	case "", "0", "false", "0s", "[]":
	default:
		if name == "string" {
			fmt.Fprintf(&b, " (default %q)", f.DefValue)
		} else {
			fmt.Fprintf(&b, " (default %v)", f.DefValue)
		}
	}
	fmt.Fprintln(w, b.String())
}
