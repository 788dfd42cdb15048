// Package cli holds what privbo's two commands (cmd/curator, cmd/modeler) do alike
// with their command lines: parsing a flag set so that -h prints the flags and exits
// successfully, and a mistake is reported first, in one line, with the way to the
// flags.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Parse parses args into fs. With -h or --help it prints fs's usage to stdout and
// returns flag.ErrHelp, which the command treats as success (exit status 0; see
// ExitCode). Any other parse error is returned as one line naming the mistake and
// `<command> -h`, without the page of flags the flag package would print after it.
func Parse(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	if err := ParseWithArgs(fs, args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (run '%s -h' for its flags)", fs.Args(), fs.Name())
	}
	return nil
}

// ParseWithArgs is Parse for a command that takes positional arguments after its
// flags (fs.Args), which it checks itself.
func ParseWithArgs(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage() // the flag set's own usage, "Usage of NAME:" and its flags by default
		return err
	case err != nil:
		return fmt.Errorf("%w (run '%s -h' for its flags)", err, fs.Name())
	}
	return nil
}

// ExitCode is the exit status of a command that returned err: 0 for success and for
// flag.ErrHelp (help was asked for and printed), the status an error in err's chain
// states through an ExitCode() int method (130 for a run that Ctrl-C interrupted, as
// a shell reports it), 1 otherwise.
func ExitCode(err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) && coded.ExitCode() > 0 {
		return coded.ExitCode()
	}
	return 1
}
