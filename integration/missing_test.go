package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// airquality is R's datasets::airquality with a text month (examples/data/README.md):
// NA cells in Solar.R (7) and in the target Ozone (37).
var (
	airqualityPath   = filepath.Join("..", "examples", "data", "airquality.csv")
	airqualitySchema = filepath.Join("..", "examples", "data", "airquality.schema.csv")
)

// TestMissingValuesAirquality (issue 28): a real curator serves a public table with NA
// cells and a text column, with the schema that declares its missing values; it drops
// the 37 rows without a target and says so, and two modeler identities on default
// flags each complete a study. Without the declaration (of Solar.R's 7 NA cells, 5 are
// in rows with a target), and without any schema, the
// curator refuses with a message about missing values that counts them per column and
// repeats no cell.
func TestMissingValuesAirquality(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	curBin, modBin := buildBinary(t, "./cmd/curator"), buildBinary(t, "./cmd/modeler")
	state := t.TempDir()
	cur := startCuratorBinary(t, curBin, "--data", airqualityPath, "--target", "Ozone", "--schema", airqualitySchema,
		"--dataset-id", "airquality", "--state", state, "--budget-epsilon", "10")
	if logs := cur.stderr.String(); !strings.Contains(logs, `rows with a missing target dropped: they are no candidates","rows":37`) ||
		!strings.Contains(logs, `"rows":116`) || !strings.Contains(logs, `Solar.R=missing`) {
		t.Errorf("the curator's start does not report 37 rows dropped, 116 loaded and the feature Solar.R=missing:\n%s", logs)
	}
	var wg sync.WaitGroup
	for _, vendor := range []string{"vendor-a", "vendor-b"} {
		wg.Go(func() {
			out, errOut, err := runModeler(modBin, "--curator", cur.addr, "--identity", vendor, "--json", "--quiet")
			if err != nil {
				t.Errorf("%s: modeler run with default flags: %v\n%s", vendor, err, errOut)
				return
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			var got struct {
				Iterations int `json:"iterations"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil || got.Iterations != 50 {
				t.Errorf("%s: a study of %d iterations (%v), want 50:\n%s", vendor, got.Iterations, err, out)
			}
		})
	}
	wg.Wait()

	out, err := exec.Command(curBin, "check-config", "--data", airqualityPath, "--target", "Ozone", "--schema", airqualitySchema,
		"--dataset-id", "airquality", "--state", t.TempDir(), "--budget-epsilon", "10").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "116 rows (37 more with a missing target: dropped) × 11 features") {
		t.Errorf("check-config with the declaring schema: %v\n%s", err, out)
	}

	// The same table without the declaration: the schema's missing fields emptied.
	b, err := os.ReadFile(airqualitySchema)
	if err != nil {
		t.Fatal(err)
	}
	undeclared := filepath.Join(t.TempDir(), "undeclared.schema.csv")
	if err := os.WriteFile(undeclared, []byte(strings.Replace(string(b), "Solar.R,0,400,200,yes,", "Solar.R,0,400,,,", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(airqualityPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"schema without missing", []string{"--schema", undeclared},
			[]string{`missing cells (empty or one of ["NA" "NaN" "N/A" "." "?"]) in feature columns with no declared value, counted in the rows with a present target: "Solar.R" (5 rows)`, "with the field missing on each such column's line, the public value of a missing cell", "or exclude the columns"}},
		{"no schema", []string{"--exclude", "Month_name"},
			[]string{`"Solar.R" (5 rows)`, "column,lower,upper,missing", "Solar.R,LOWER,UPPER,VALUE", "Wind,LOWER,UPPER,\n", "or exclude the columns"}},
	} {
		args := append([]string{"check-config", "--data", airqualityPath, "--target", "Ozone", "--dataset-id", "airquality",
			"--state", t.TempDir(), "--budget-epsilon", "10"}, tt.args...)
		out, err := exec.Command(curBin, args...).CombinedOutput()
		msg := string(out)
		if err == nil {
			t.Errorf("%s: check-config accepted the table:\n%s", tt.name, msg)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: check-config says\n%s\nwant it to contain %q", tt.name, msg, w)
			}
		}
		for _, row := range strings.Split(string(data), "\n")[1:] {
			if len(row) > 8 && strings.Contains(msg, row) {
				t.Errorf("%s: the refusal repeats the data row %q", tt.name, row)
			}
		}
	}
}
