package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

func newSet() *flag.FlagSet {
	fs := flag.NewFlagSet("modeler run", flag.ContinueOnError)
	fs.Int("r", 10, "projection dimension r")
	return fs
}

// TestParse checks the three outcomes: help printed to stdout with a success exit
// status, an unknown flag reported first in one line, and stray arguments refused.
func TestParse(t *testing.T) {
	var out bytes.Buffer
	err := Parse(newSet(), []string{"--help"}, &out)
	if !errors.Is(err, flag.ErrHelp) || ExitCode(err) != 0 {
		t.Errorf("--help: %v, exit %d; want ErrHelp, exit 0", err, ExitCode(err))
	}
	if !strings.Contains(out.String(), "Usage of modeler run:") || !strings.Contains(out.String(), "projection dimension r") {
		t.Errorf("--help printed %q", out.String())
	}
	out.Reset()
	err = Parse(newSet(), []string{"--nope"}, &out)
	if err == nil || ExitCode(err) != 1 || out.Len() != 0 {
		t.Fatalf("--nope: %v, exit %d, printed %q", err, ExitCode(err), out.String())
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "flag provided but not defined: -nope") || !strings.Contains(msg, "'modeler run -h'") || strings.Contains(msg, "\n") {
		t.Errorf("--nope: message %q, want the mistake first, one line, and the way to the flags", msg)
	}
	if err := Parse(newSet(), []string{"--r", "5", "extra"}, &out); err == nil || !strings.Contains(err.Error(), `["extra"]`) {
		t.Errorf("stray argument: %v", err)
	}
	if err := Parse(newSet(), []string{"--r", "5"}, &out); err != nil || ExitCode(err) != 0 {
		t.Errorf("good flags: %v", err)
	}
}

// codedError states its exit status, as an interrupted run does.
type codedError int

func (c codedError) Error() string { return "stopped" }
func (c codedError) ExitCode() int { return int(c) }

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{flag.ErrHelp, 0},
		{errors.New("bad"), 1},
		{codedError(130), 130},
		{fmt.Errorf("run: %w", codedError(143)), 143},
		{codedError(0), 1}, // an error never exits 0
	} {
		if got := ExitCode(tc.err); got != tc.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// TestDispatch runs the named command and prints the usage, with the commands in
// order, to stdout for help and to stderr with an error otherwise.
func TestDispatch(t *testing.T) {
	var got []string
	cmds := []Command{
		{Name: "serve", Help: "serve it", Run: func(args []string, _, _ io.Writer) error { got = args; return nil }},
		{Name: "check-config", Help: "check it", Run: func([]string, io.Writer, io.Writer) error { return errors.New("checked") }},
	}
	var out, errw strings.Builder
	if err := Dispatch("curator", cmds, []string{"serve", "-a", "b"}, &out, &errw); err != nil || !slices.Equal(got, []string{"-a", "b"}) {
		t.Fatalf("serve: err %v, args %q", err, got)
	}
	if err := Dispatch("curator", cmds, []string{"check-config"}, &out, &errw); err == nil || err.Error() != "checked" {
		t.Fatalf("check-config: err %v", err)
	}
	const usage = "usage: curator <command> [flags]\n\ncommands:\n  serve        serve it\n  check-config check it\n\nRun 'curator <command> -h' for the flags of a command.\n"
	if err := Dispatch("curator", cmds, []string{"help"}, &out, &errw); err != nil || out.String() != usage || errw.Len() != 0 {
		t.Fatalf("help: err %v, stdout %q, stderr %q", err, out.String(), errw.String())
	}
	out.Reset()
	for _, args := range [][]string{nil, {"serv"}} {
		errw.Reset()
		if err := Dispatch("curator", cmds, args, &out, &errw); err == nil || errw.String() != usage || out.Len() != 0 {
			t.Fatalf("%q: err %v, stderr %q", args, err, errw.String())
		}
	}
}
