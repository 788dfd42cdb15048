package integration

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/projection"
)

// airqualityParquet writes the shipped airquality table as Parquet into a new
// directory, as a warehouse would export it: the readings as nullable DOUBLE (NA as
// null), the month name as dictionary-encoded text, row groups of 40 rows.
func airqualityParquet(t *testing.T) string {
	t.Helper()
	f, err := os.Open(airqualityPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var fields []reflect.StructField
	for k, h := range recs[0] {
		typ, tag := reflect.TypeFor[*float64](), h
		if h == "Month_name" {
			typ, tag = reflect.TypeFor[string](), h+",dict"
		}
		fields = append(fields, reflect.StructField{Name: "F" + strconv.Itoa(k), Type: typ, Tag: reflect.StructTag(`parquet:"` + tag + `"`)})
	}
	typ := reflect.StructOf(fields)
	path := filepath.Join(t.TempDir(), "airquality.parquet")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w := parquet.NewWriter(out, parquet.SchemaOf(reflect.New(typ).Interface()), parquet.MaxRowsPerRowGroup(40))
	for _, r := range recs[1:] {
		row := reflect.New(typ).Elem()
		for k, cell := range r {
			if fields[k].Type.Kind() == reflect.String {
				row.Field(k).SetString(cell)
			} else if v, err := strconv.ParseFloat(cell, 64); err == nil {
				row.Field(k).Set(reflect.ValueOf(&v))
			}
		}
		if err := w.Write(row.Addr().Interface()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestParquetStudy (issue 32 item 5): a curator serving a Parquet copy of airquality
// (NA cells, a text month) makes the release its CSV makes, under the same id, and a
// study over it queries the same rows and gets the same answers. Both curators draw
// the lifted mechanism's matrix (no noise) from the same simulation seed, so equal data
// give equal releases.
func TestParquetStudy(t *testing.T) {
	sc, err := dataset.ParseScaling("schema:" + airqualitySchema)
	if err != nil {
		t.Fatal(err)
	}
	var results []*modeler.Result
	for _, path := range []string{airqualityPath, airqualityParquet(t)} {
		cur := curatortest.Start(t, curatortest.Options{DataPath: path, Target: "Ozone", Scaling: sc, DatasetID: "airquality",
			Budget: ledger.Cost{Epsilon: 100, Delta: 0.1}, Output: curator.OutputPrivacy{Mechanism: "none"},
			Configure: func(cfg *config.Config) {
				cfg.ProjectionMechanism = projection.MechanismLifted // no noise: M alone, from the seed
				cfg.SimulationHooks = func(c *curator.Config) {
					c.SimulationProjectionSource = func() projection.Source { return projection.SeededSource(7) }
				}
			}})
		res, err := modeler.Run(context.Background(), curatorclient.New(cur.Client(t, "vendor")),
			modeler.Config{R: 5, Epsilon: 4, Delta: 1e-4, Iterations: 15, InitialIndex: 3})
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(path), err)
		}
		results = append(results, res)
	}
	c, p := results[0], results[1]
	if p.ReleaseID != c.ReleaseID || !slices.Equal(p.Queried, c.Queried) || !slices.Equal(p.Values, c.Values) || len(c.Queried) != 15 {
		t.Errorf("Parquet study: release %s, rows %v, answers %v; CSV study: release %s, rows %v, answers %v; want the same 15",
			p.ReleaseID, p.Queried, p.Values, c.ReleaseID, c.Queried, c.Values)
	}
}
