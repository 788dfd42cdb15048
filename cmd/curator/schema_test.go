package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dataset"
)

// schemaTables writes the schema file at path as [[schema.column]] tables.
func schemaTables(t *testing.T, path string) string {
	t.Helper()
	sch, err := dataset.LoadSchema(path)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range sch.Columns {
		fmt.Fprintf(&b, "[[schema.column]]\nname = %q\n", c.Name)
		if c.HasBounds {
			fmt.Fprintf(&b, "lower = %v\nupper = %v\n", c.Lower, c.Upper)
		} else {
			fmt.Fprintf(&b, "scale = %v\noffset = %v\n", c.Scale, c.Offset)
		}
	}
	return b.String()
}

// TestSchemaTables: the configuration file's [[schema.column]] tables scale as the same
// schema given as a file; malformed tables and a conflicting --scaling are refused.
func TestSchemaTables(t *testing.T) {
	base := []string{"--data", diabetes, "--target", "progression", "--dataset-id", "d", "--state", t.TempDir(), "--budget-epsilon", "1"}
	build := func(args ...string) (dataset.Scaling, error) {
		t.Helper()
		f, err := parseServe("curator serve", append(slices.Clone(base), args...))
		if err != nil {
			return dataset.Scaling{}, err
		}
		cfg, err := f.build()
		return cfg.Data.Scaling, err
	}
	fromFile, err := build("--schema", diabetesSchema)
	if err != nil {
		t.Fatal(err)
	}
	tables := writeConfig(t, "# the public schema, inline\n"+schemaTables(t, diabetesSchema))
	fromTables, err := build("--config", tables)
	if err != nil {
		t.Fatal(err)
	}
	if fromTables.Mode != dataset.ScaleSchema || fromTables.ClipNorm != fromFile.ClipNorm || fromTables.Unit != fromFile.Unit ||
		fromTables.Schema == nil || len(fromTables.Schema.Columns) != len(fromFile.Schema.Columns) {
		t.Fatalf("scaling from tables %+v, from the file %+v", fromTables, fromFile)
	}
	for i, c := range fromTables.Schema.Columns {
		f := fromFile.Schema.Columns[i]
		if c.Name != f.Name || c.HasBounds != f.HasBounds || c.Lower != f.Lower || c.Upper != f.Upper || c.Scale != f.Scale || c.Offset != f.Offset {
			t.Errorf("column %d from tables %+v, from the file %+v", i, c, f)
		}
	}
	// The command line's --schema FILE wins over the file's tables.
	if sc, err := build("--config", tables, "--schema", diabetesSchema); err != nil || sc.Schema.File != diabetesSchema {
		t.Errorf("--schema over tables: %+v, %v; want the file", sc.Schema, err)
	}
	if err := run([]string{"check-config", "--config", tables, "--data", diabetes, "--target", "progression", "--dataset-id", "d",
		"--state", t.TempDir(), "--budget-epsilon", "1"}); err != nil {
		t.Errorf("check-config with schema tables: %v", err)
	}
	for _, tc := range []struct{ text, want string }{
		{"[[schema.column]]\nname = 'age'\nlower = 18\n", "only one of lower and upper"},
		{"[[schema.column]]\nname = 'age'\nlower = 18\nupper = 90\nscale = 2\n", "both bounds"},
		{"[[schema.column]]\nname = 'age'\nlower = 90\nupper = 18\n", "lower 90 must be below upper 18"},
		{"[[schema.column]]\nname = 'age'\nlow = 18\n", `unknown key "low"`},
		{"[[schema.column]]\nlower = 18\nupper = 90\n", "no name"},
		{"[[schema.column]]\nname = 'age'\nlower = '18'\nupper = 90\n", "lower must be a number"},
		{"[[schema.column]]\nname = 'age'\nlower = 1\nupper = 2\n[[schema.column]]\nname = 'age'\nscale = 1\n", "column named twice"},
		{"[schema]\ncolumns = 1\n", `unknown key "columns"`},
		{"[[schema.column]]\nname = 'age'\nlower = 0\nupper = 90\ntransform = 'log'\n", "log needs lower > 0"},
		{"[[schema.column]]\nname = 'age'\nlower = 1\nupper = 90\nmissing = 100\n", "within the column's bounds"},
		{"[[schema.column]]\nname = 'age'\nlower = 1\nupper = 90\nmissing = 50\nmissing_indicator = 'yes'\n", "missing_indicator must be true or false"},
	} {
		_, err := build("--config", writeConfig(t, tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "schema") {
			t.Errorf("tables %q: %v, want an error containing %q", tc.text, err, tc.want)
		}
	}
	sc, err := build("--config", writeConfig(t, "[[schema.column]]\nname = 'age'\nlower = 18\nupper = 90\nmissing = 50\nmissing_indicator = true\ntransform = 'log'\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c := sc.Schema.Columns[0]; c.Missing != "50" || !c.MissingIndicator || c.Transform != "log" {
		t.Errorf("missing, missing_indicator and transform in a table: %+v", c)
	}
	if _, err := build("--config", tables, "--scaling", "none"); err == nil || !strings.Contains(err.Error(), "conflict with --scaling none") {
		t.Errorf("tables with --scaling none: %v, want a conflict", err)
	}
}
