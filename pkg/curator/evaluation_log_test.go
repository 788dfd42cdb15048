package curator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/internal/testlog"
)

// TestProgramStderrNeverLogged: an evaluation program that fails after echoing its
// input (the row) on standard error, as crash traces do, leaves no trace of the row in
// the operator's log (Config.Logger never receives a data row), while the log still
// says what failed and how to debug it.
func TestProgramStderrNeverLogged(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "crash.sh")
	// Row 7 of testCuratorOutput's data is a=7, b=(7*5)%7=0; print it to stderr, twice,
	// with a marker, then fail.
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nread line\necho \"Traceback: bad row MARKER $line\" >&2\necho \"$line\" >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, _, ds := testCurator(t, Evaluation{Mode: EvaluateProgram, Command: []string{prog}, Timeout: 5 * time.Second})
	var logs *testlog.Buffer
	c.log, logs = testlog.New()

	const row = 7
	if _, _, err := c.Query(context.Background(), "vendor", []int{row}); !errors.Is(err, ErrEvaluation) {
		t.Fatalf("query with a crashing program: %v, want ErrEvaluation", err)
	}
	got := logs.String()
	if !strings.Contains(got, "evaluation program failed") || !strings.Contains(got, `"exit_status":"exit status 3"`) ||
		!strings.Contains(got, `"stderr_bytes"`) || !strings.Contains(got, "run the program by hand") {
		t.Errorf("log does not report the failure (exit status, stderr size, how to debug):\n%s", got)
	}
	// Nothing the program wrote may appear: not the marker, not the row's values as the
	// program saw them ("name":value, compared with the log's JSON escapes removed,
	// since the old log quoted stderr inside a quoted error).
	unescaped := strings.ReplaceAll(got, `\`, "")
	leaks := []string{"MARKER", "Traceback"}
	raw := ds.RawRow(row)
	for j, name := range ds.Features {
		leaks = append(leaks, `"`+name+`":`+strconv.FormatFloat(raw[j], 'g', -1, 64))
	}
	for _, s := range leaks {
		if strings.Contains(unescaped, s) {
			t.Errorf("log contains %q from the program's stderr:\n%s", s, got)
		}
	}
}
