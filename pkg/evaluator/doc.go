// Package evaluator runs an operator's own program to score one
// hyperparameter setting: the "external evaluator" of privbo's private
// hyperparameter search jobs, so a curator can plug in its own training
// code instead of the built-in learner.
//
// # Protocol
//
// For every evaluation the program (argv Config.Command, in Config.Dir, with
// environment Config.Env) is started once and receives one JSON object on
// standard input, followed by a newline and end of file, for example
//
//	{"lambda":0.001,"lr":0.5}
//
// It must print one JSON value on standard output and exit with status 0:
//
//	{"score": 0.93}      (other fields are ignored)
//	0.93                 (a bare number is accepted too)
//
// The score must be a finite JSON number (JSON has no NaN or Infinity).
// Anything else is an ErrBadOutput error: no output, text that is not JSON,
// a second JSON value, a missing or non-numeric score, a number outside the
// float64 range, or more than MaxOutput bytes. A non-zero exit status is an
// ErrExit error. A program still running after Config.Timeout is killed and
// gives an ErrTimeout error; when the caller's context ends first the error
// wraps the context's error instead.
//
// # Processes
//
// On Unix the program runs in its own process group (Setpgid), and the
// whole group is sent SIGKILL on timeout or cancellation, so shell scripts
// that start children (a Python training run under sh) do not leave them
// running. A program that exits but leaves a background process holding its
// standard output is an ErrBadOutput error; that process group is killed
// too. Background processes that detach from the output are not tracked
// once the program has exited: the program should wait for its children.
//
// # Errors and privacy
//
// Standard error is captured (the last MaxStderr bytes) and the last 1 KiB
// of it is quoted in the error text, for the curator's operator. The
// program runs on the curator's data and may print anything there, so the
// text of an *Error is for the operator's log, never for a modeler: a
// service answering a modeler should report only the kind (errors.Is with
// ErrTimeout, ErrBadOutput, ErrExit). Standard output is never quoted.
// A program that is handed a data row on standard input (the curator's
// per-row evaluation) may echo it on standard error, in a crash trace for
// instance; its caller must not log the error text at all, only the kind and
// Error.ExitStatus, Error.Elapsed and Error.StderrSize.
//
// The score itself is not private: whatever guarantee a job gives for it
// comes from the mechanism the job applies to it afterwards, and from the
// operator's declaration of what the program computes.
package evaluator
