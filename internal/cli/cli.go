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

// Command is one of a binary's commands.
type Command struct {
	Name, Help string
	Run        func(args []string, stdout, stderr io.Writer) error
}

// Dispatch runs the command of cmds that args[0] names with the rest of args. With
// no command, or one cmds lacks, it prints the binary's usage (the commands, in
// order) to stderr and returns an error; with -h, --help or help, to stdout.
func Dispatch(binary string, cmds []Command, args []string, stdout, stderr io.Writer) error {
	usage := func(w io.Writer) {
		width := 0
		for _, c := range cmds {
			width = max(width, len(c.Name))
		}
		fmt.Fprintf(w, "usage: %s <command> [flags]\n\ncommands:\n", binary)
		for _, c := range cmds {
			fmt.Fprintf(w, "  %-*s %s\n", width, c.Name, c.Help)
		}
		fmt.Fprintf(w, "\nRun '%s <command> -h' for the flags of a command.\n", binary)
	}
	if len(args) == 0 {
		usage(stderr)
		return errors.New("no command given")
	}
	for _, c := range cmds {
		if c.Name == args[0] {
			return c.Run(args[1:], stdout, stderr)
		}
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return nil
	}
	usage(stderr)
	return fmt.Errorf("unknown command %q", args[0])
}
