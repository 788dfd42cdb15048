package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/privbo/privbo/pkg/dataset"
)

// schemaValue is --schema: the path of a public schema CSV file or, in the configuration
// file, the schema itself as [[schema.column]] tables, each with a name and either lower
// and upper (public bounds) or scale and an optional offset, and optionally missing (a
// number), missing_indicator (a boolean) and transform (a string), as the lines of a
// schema file (dataset.ParseSchema):
//
//	[[schema.column]]
//	name = "age"
//	lower = 18
//	upper = 90
type schemaValue struct {
	file  string
	table *dataset.Schema
}

func (v *schemaValue) String() string {
	if v == nil {
		return ""
	}
	return v.file
}

func (v *schemaValue) Set(s string) error {
	v.file, v.table = s, nil
	return nil
}

// SetTable reads the [schema] table of the configuration file (flagconf.TableValue).
func (v *schemaValue) SetTable(t map[string]any) error {
	sch, err := schemaFromTable(t)
	if err != nil {
		return err
	}
	v.file, v.table = "", sch
	return nil
}

// schemaFields are the keys of one [[schema.column]] table.
var schemaFields = []string{"name", "lower", "upper", "scale", "offset", "missing", "missing_indicator", "transform"}

func schemaFromTable(t map[string]any) (*dataset.Schema, error) {
	for k := range t {
		if k != "column" {
			return nil, fmt.Errorf("unknown key %q: the schema is a list of [[schema.column]] tables", k)
		}
	}
	cols, ok := t["column"].([]any)
	if !ok || len(cols) == 0 {
		return nil, errors.New("want [[schema.column]] tables, one per column")
	}
	sch := &dataset.Schema{File: "[[schema.column]] of the configuration file"}
	for i, c := range cols {
		ct, ok := c.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("column %d is not a table", i+1)
		}
		col, err := schemaColumn(ct)
		if err != nil {
			return nil, fmt.Errorf("column %d: %w", i+1, err)
		}
		sch.Columns = append(sch.Columns, col)
	}
	if err := sch.Validate(); err != nil {
		return nil, err
	}
	return sch, nil
}

// schemaColumn is one [[schema.column]] table, with the rules of a schema file's line.
func schemaColumn(t map[string]any) (dataset.SchemaColumn, error) {
	var c dataset.SchemaColumn
	vals := map[string]float64{}
	for k, v := range t {
		switch {
		case k == "name":
			s, ok := v.(string)
			if !ok || strings.TrimSpace(s) == "" {
				return c, errors.New("name must be a non-empty string")
			}
			c.Name = strings.TrimSpace(s)
		case k == "missing_indicator":
			b, ok := v.(bool)
			if !ok {
				return c, errors.New("missing_indicator must be true or false")
			}
			c.MissingIndicator = b
		case k == "transform":
			s, ok := v.(string)
			if !ok {
				return c, errors.New("transform must be a string: log, log1p or sqrt")
			}
			c.Transform = strings.ToLower(strings.TrimSpace(s))
		case slices.Contains(schemaFields, k):
			switch n := v.(type) {
			case int64:
				vals[k] = float64(n)
			case float64:
				if math.IsNaN(n) || math.IsInf(n, 0) {
					return c, fmt.Errorf("%s must be a finite number, got %g", k, n)
				}
				vals[k] = n
			default:
				return c, fmt.Errorf("%s must be a number, got %v", k, v)
			}
		default:
			return c, fmt.Errorf("unknown key %q (want %s)", k, strings.Join(schemaFields, ", "))
		}
	}
	if c.Name == "" {
		return c, errors.New("no name")
	}
	if m, ok := vals["missing"]; ok {
		c.Missing = strconv.FormatFloat(m, 'g', -1, 64)
	}
	_, lo := vals["lower"]
	_, up := vals["upper"]
	_, sc := vals["scale"]
	_, off := vals["offset"]
	switch {
	case (lo || up) && (sc || off):
		return c, fmt.Errorf("%q gives both bounds (lower, upper) and a scale or offset; give one or the other", c.Name)
	case lo != up:
		return c, fmt.Errorf("%q gives only one of lower and upper; bounds need both", c.Name)
	case lo:
		c.HasBounds, c.Lower, c.Upper = true, vals["lower"], vals["upper"]
	case sc:
		c.Scale, c.Offset = vals["scale"], vals["offset"]
	case off:
		return c, fmt.Errorf("%q gives an offset but no scale", c.Name)
	default:
		return c, fmt.Errorf("%q gives neither bounds (lower, upper) nor a scale", c.Name)
	}
	return c, nil
}
