package main

import (
	"reflect"
	"testing"

	"github.com/privbo/privbo/pkg/config"
)

// settingPaths maps the name of each setting config.Config.Bind declares to the path
// of its field below config.Config ("Output.Epsilon"), found by the field's address.
func settingPaths(t *testing.T) map[string]string {
	t.Helper()
	cfg := config.NewConfig()
	type field struct {
		path string
		typ  reflect.Type
	}
	at := map[uintptr][]field{}
	var walk func(v reflect.Value, prefix string)
	walk = func(v reflect.Value, prefix string) {
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fv := v.Field(i)
				at[fv.Addr().Pointer()] = append(at[fv.Addr().Pointer()], field{prefix + f.Name, f.Type})
				if fv.Kind() == reflect.Struct {
					walk(fv, prefix+f.Name+".")
				}
			}
		}
	}
	walk(reflect.ValueOf(&cfg).Elem(), "")
	paths := map[string]string{}
	for _, s := range cfg.Bind().All() {
		p := reflect.ValueOf(s.Field())
		var best string
		for _, f := range at[p.Pointer()] { // a struct and its first field share an address
			if f.typ == p.Elem().Type() || best == "" || len(f.path) > len(best) && f.typ.Kind() != reflect.Struct {
				best = f.path
			}
			if f.typ == p.Elem().Type() {
				break
			}
		}
		if best == "" {
			t.Fatalf("setting %s: its field is not one of config.Config's", s.Name)
		}
		paths[s.Name] = best
	}
	return paths
}
