package main

import (
	"regexp"
	"strings"
)

// configFlags maps the settings of server.Config, as the server's errors and warnings
// name them (Config.<path>, see server.FieldError), to the serve flags that set them, so
// that a person reads the flag to type. TestConfigFlags checks that every path is a
// field of server.Config and every flag one of serve's.
var configFlags = map[string]string{
	"Listen":                       "--listen",
	"DataPath":                     "--data",
	"Data.Target":                  "--target",
	"Data.Features":                "--features",
	"Data.Exclude":                 "--exclude",
	"Data.Scaling.Mode":            "--scaling",
	"Data.Scaling.Schema":          "--schema",
	"PrivateScalingShare":          "--private-scaling-share",
	"EstimateTargetRange":          "--estimate-target-range",
	"DatasetID":                    "--dataset-id",
	"DatasetName":                  "--name",
	"StateDir":                     "--state",
	"Ledger.Kind":                  "--ledger",
	"Ledger.DSN":                   "--ledger-dsn",
	"Ledger.Schema":                "--ledger-schema",
	"Ledger.CallTimeout":           "--ledger-timeout",
	"Budget.Epsilon":               "--budget-epsilon",
	"Budget.Delta":                 "--budget-delta",
	"DatasetBudget.Epsilon":        "--dataset-budget-epsilon",
	"DatasetBudget.Delta":          "--dataset-budget-delta",
	"PatientBudget.Epsilon":        "--patient-budget-epsilon",
	"PatientBudget.Delta":          "--patient-budget-delta",
	"PatientDatasetBudget.Epsilon": "--patient-dataset-budget-epsilon",
	"PatientDatasetBudget.Delta":   "--patient-dataset-budget-delta",
	"ChangeLimits":                 "--change-limits",
	"NoiseSD":                      "--noise-sd",
	"Output.Mechanism":             "--output-privacy",
	"Output.Epsilon":               "--output-epsilon",
	"Output.Delta":                 "--output-delta",
	"Output.Lower":                 "--output-lower",
	"Output.Upper":                 "--output-upper",
	"ExactAnswersMaxRows":          "--exact-answers-max-rows",
	"DefaultStudy.Epsilon":         "--study-epsilon",
	"DefaultStudy.Delta":           "--study-delta",
	"AllowExactProgramAnswers":     "--allow-exact-program-answers",
	"Evaluation.Mode":              "--evaluate",
	"Evaluation.Command":           "--evaluate-program",
	"Evaluation.Timeout":           "--evaluate-timeout",
	"MaxQueryIndices":              "--max-query-indices",
	"MaxProjectionDim":             "--max-projection-dim",
	"ProjectionMechanism":          "--projection-mechanism",
	"MemoryLimit":                  "--memory-limit",
	"ReleaseMemory":                "--release-memory",
	"ShutdownTimeout":              "--shutdown-timeout",
	"TLS.CertFile":                 "--tls-cert",
	"TLS.KeyFile":                  "--tls-key",
	"TLS.ClientCAFile":             "--client-ca",
	"TokensFile":                   "--tokens",
	"AllowPlaintext":               "--allow-plaintext",
	"Limits.Rate":                  "--rate-limit",
	"Limits.Burst":                 "--rate-burst",
	"Limits.Concurrent":            "--max-in-flight",
	"MetricsListen":                "--metrics-listen",
	"Jobs.Enabled":                 "--jobs",
	"Jobs.ValidationFraction":      "--job-validation-fraction",
	"Jobs.SplitSeed":               "--job-split-seed",
	"Jobs.Evaluators":              "--evaluators",
	"Jobs.Kusner.K1":               "--kusner-k1",
	"Jobs.Kusner.NoiseVariance":    "--kusner-noise-variance",
	"Jobs.Kusner.GammaT":           "--kusner-gamma-t",
	"Jobs.Kusner.A":                "--kusner-a",
	"Jobs.Kusner.Tau":              "--kusner-tau",
	"Jobs.MaxGrid":                 "--max-job-grid",
	"Jobs.MaxIterations":           "--max-job-iterations",
	"Jobs.MaxRunning":              "--max-running-jobs",
	"Jobs.BoundsEpsilon":           "--job-bounds-epsilon",
	"Jobs.Preprocessing":           "--job-preprocessing",
	"Jobs.TrainingConsented":       "--job-training-consented",
	"Jobs.Lease":                   "--job-lease",

	// Who may call, and what a caller may cost before it is authenticated.
	"TrustIdentityHeaderFromNetwork": "--trust-identity-header-from-network",
	"AuthFailures.Rate":              "--auth-failure-rate",
	"AuthFailures.Burst":             "--auth-failure-burst",
	"AuthFailures.Logged":            "--auth-failures-logged",
	"AuthFailures.LogInterval":       "--auth-failure-log-interval",
	"AuthFailures.MaxPeers":          "--auth-failure-peers",
	"MaxHeaderBytes":                 "--max-header-bytes",
}

// configRef matches a setting named the server's way: Config followed by exported
// field names.
var configRef = regexp.MustCompile(`\bConfig(\.[A-Z][A-Za-z0-9]*)+`)

// flagText rewrites the Config.<path> names in s as serve's flags; a path without a
// flag stays as it is.
func flagText(s string) string {
	return configRef.ReplaceAllStringFunc(s, func(ref string) string {
		if f, ok := configFlags[strings.TrimPrefix(ref, "Config.")]; ok {
			return f
		}
		return ref
	})
}

// flagError is an error whose text names flags instead of Config fields; it unwraps
// to the original, so errors.Is and errors.As see through it.
type flagError struct {
	text string
	err  error
}

func (e *flagError) Error() string { return e.text }
func (e *flagError) Unwrap() error { return e.err }

// withFlagNames returns err with the settings it names rewritten as flags.
func withFlagNames(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	if t := flagText(text); t != text {
		return &flagError{text: t, err: err}
	}
	return err
}
