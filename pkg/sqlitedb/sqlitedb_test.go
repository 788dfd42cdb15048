package sqlitedb

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(filepath.Join(dir, "a.db"), "foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var fk int
	if err := db.QueryRow("PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
		t.Errorf("extra pragma foreign_keys = %d, %v; want 1", fk, err)
	}
	for _, tc := range []struct{ path, want string }{
		{"", "must not be empty"},
		{":memory:", "must name a file"},
		{"file:x.db?mode=memory", "must name a file"},
		{filepath.Join(dir, "a?b.db"), "must not contain"},
	} {
		if _, err := Open(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) error = %v, want %q", tc.path, err, tc.want)
		}
	}
}
