package setting

import "testing"

func TestBytes(t *testing.T) {
	tests := []struct {
		in    string
		want  int64
		print string
	}{
		{"2GiB", 2 << 30, "2GiB"},
		{"1.5GiB", 3 << 29, "1536MiB"},
		{"800MB", 800e6, "781250KiB"},
		{"2147483648", 2 << 30, "2GiB"},
		{" 16 MiB ", 16 << 20, "16MiB"},
		{"512KiB", 512 << 10, "512KiB"},
		{"3kB", 3000, "3000"},
		{"0", 0, "0"},
		{"100B", 100, "100"},
	}
	for _, tt := range tests {
		var b bytesValue
		if err := b.Set(tt.in); err != nil || int64(b) != tt.want || b.String() != tt.print {
			t.Errorf("Set(%q) = %d (%s), %v; want %d (%s)", tt.in, int64(b), b.String(), err, tt.want, tt.print)
		}
	}
	for _, bad := range []string{"", "GiB", "lots", "1.5XB", "NaN", "1e30GiB"} {
		var b bytesValue
		if err := b.Set(bad); err == nil {
			t.Errorf("Set(%q) = %d, want an error", bad, int64(b))
		}
	}
	r := BytesAtLeast(16 << 20)
	for v, ok := range map[int64]bool{16 << 20: true, 2 << 30: true, 15 << 20: false, 0: false, -1 << 30: false} {
		if err := r(v); (err == nil) != ok {
			t.Errorf("BytesAtLeast(16MiB)(%d) = %v, want ok %v", v, err, ok)
		}
	}
}
