package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestRunRefusesArguments checks that `modeler run` refuses positional arguments, as
// `studies` and `report` do, before contacting any curator.
func TestRunRefusesArguments(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run([]string{"run", "--curator", "127.0.0.1:1", "--iterations", "5", "extra"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), `unexpected arguments ["extra"]`) {
		t.Errorf("run with a positional argument: err = %v, want unexpected arguments", err)
	}
}

// TestErrorLine checks that an error is printed with one "modeler: " prefix.
func TestErrorLine(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("no command given"), "modeler: no command given"},
		{errors.New("modeler: query of rows [3]: refused"), "modeler: query of rows [3]: refused"},
		{fmt.Errorf("modeler: dataset info: %w", errors.New("x")), "modeler: dataset info: x"},
	} {
		if got := errorLine(tc.err); got != tc.want {
			t.Errorf("errorLine(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
