package memory

import (
	"testing"
	"testing/fstest"
)

const meminfo = "MemTotal:       24684100 kB\nMemFree:        21269968 kB\n"

// TestAvailable reads the limit from fake /proc and /sys trees laid out as Linux lays
// them out (the files' formats from the kernel's cgroup-v1/memory.rst and
// cgroup-v2.rst; the mountinfo lines copied from a Debian host, a Docker container with
// a cgroup namespace and one without).
func TestAvailable(t *testing.T) {
	const phys = 24684100 << 10
	tests := []struct {
		name   string
		files  map[string]string
		want   int64
		source string
		ok     bool
	}{
		{
			name: "cgroup v2 in a container (cgroup namespace): memory.max of the root as seen",
			files: map[string]string{
				"proc/meminfo":              meminfo,
				"proc/self/cgroup":          "0::/\n",
				"proc/self/mountinfo":       "31 23 0:28 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate\n",
				"sys/fs/cgroup/memory.max":  "2147483648\n",
				"sys/fs/cgroup/memory.high": "max\n",
			},
			want: 2 << 30, source: "/sys/fs/cgroup/memory.max", ok: true,
		},
		{
			name: "cgroup v2 on a host: the smallest limit on the path to the root",
			files: map[string]string{
				"proc/meminfo":        meminfo,
				"proc/self/cgroup":    "0::/system.slice/privbo.service\n",
				"proc/self/mountinfo": "31 23 0:28 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
				"sys/fs/cgroup/system.slice/privbo.service/memory.max": "max\n",
				"sys/fs/cgroup/system.slice/memory.max":                "3221225472\n",
			},
			want: 3 << 30, source: "/sys/fs/cgroup/system.slice/memory.max", ok: true,
		},
		{
			name: "cgroup v2 without any limit: physical memory",
			files: map[string]string{
				"proc/meminfo":               meminfo,
				"proc/self/cgroup":           "0::/a\n",
				"proc/self/mountinfo":        "31 23 0:28 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
				"sys/fs/cgroup/a/memory.max": "max\n",
			},
			want: phys, source: "/proc/meminfo MemTotal (physical memory)", ok: true,
		},
		{
			name: "cgroup v1, limit on the process's cgroup",
			files: map[string]string{
				"proc/meminfo":     meminfo,
				"proc/self/cgroup": "9:name=systemd:/\n4:memory:/process_api/abc\n3:cpuset:/\n0::/\n",
				"proc/self/mountinfo": "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
					"34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n",
				"sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes": "1073741824\n",
				"sys/fs/cgroup/memory/process_api/memory.limit_in_bytes":     "9223372036854771712\n",
				"sys/fs/cgroup/memory/memory.limit_in_bytes":                 "9223372036854771712\n",
			},
			want: 1 << 30, source: "/sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes", ok: true,
		},
		{
			name: "cgroup v1, the parent's limit through hierarchical_memory_limit",
			files: map[string]string{
				"proc/meminfo":        meminfo,
				"proc/self/cgroup":    "4:memory:/process_api/abc\n",
				"proc/self/mountinfo": "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n",
				"sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes": "9223372036854771712\n",
				"sys/fs/cgroup/memory/process_api/abc/memory.stat":           "cache 0\nhierarchical_memory_limit 536870912\nhierarchical_memsw_limit 9223372036854771712\n",
			},
			want: 512 << 20, source: "/sys/fs/cgroup/memory/process_api/abc/memory.stat hierarchical_memory_limit", ok: true,
		},
		{
			name: "cgroup v1 unlimited (this machine's layout): physical memory",
			files: map[string]string{
				"proc/meminfo":        meminfo,
				"proc/self/cgroup":    "4:memory:/process_api/abc\n",
				"proc/self/mountinfo": "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n",
				"sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes": "9223372036854771712\n",
				"sys/fs/cgroup/memory/process_api/abc/memory.stat":           "hierarchical_memory_limit 9223372036854771712\n",
			},
			want: phys, source: "/proc/meminfo MemTotal (physical memory)", ok: true,
		},
		{
			name: "cgroup v1 in Docker without a cgroup namespace: the mount's root is the container's cgroup",
			files: map[string]string{
				"proc/meminfo":        meminfo,
				"proc/self/cgroup":    "5:memory:/docker/0123abcd\n",
				"proc/self/mountinfo": "40 33 0:35 /docker/0123abcd /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n",
				"sys/fs/cgroup/memory/memory.limit_in_bytes": "2147483648\n",
			},
			want: 2 << 30, source: "/sys/fs/cgroup/memory/memory.limit_in_bytes", ok: true,
		},
		{
			name: "a cgroup limit above physical memory: physical memory",
			files: map[string]string{
				"proc/meminfo":             meminfo,
				"proc/self/cgroup":         "0::/\n",
				"proc/self/mountinfo":      "31 23 0:28 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
				"sys/fs/cgroup/memory.max": "68719476736\n",
			},
			want: phys, source: "/proc/meminfo MemTotal (physical memory)", ok: true,
		},
		{
			name: "cgroup files but no meminfo",
			files: map[string]string{
				"proc/self/cgroup":         "0::/\n",
				"proc/self/mountinfo":      "31 23 0:28 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
				"sys/fs/cgroup/memory.max": "1000000000\n",
			},
			want: 1000000000, source: "/sys/fs/cgroup/memory.max", ok: true,
		},
		{
			name:  "no /proc",
			files: map[string]string{},
			ok:    false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, data := range tt.files {
				fsys[name] = &fstest.MapFile{Data: []byte(data)}
			}
			got, ok := available(fsys)
			if ok != tt.ok || got.Bytes != tt.want || got.Source != tt.source {
				t.Errorf("available() = %+v, %v; want {Bytes:%d Source:%s}, %v", got, ok, tt.want, tt.source, tt.ok)
			}
		})
	}
}

// TestAvailableHere reads this machine's figure: whatever it is, it is positive.
func TestAvailableHere(t *testing.T) {
	lim, ok := Available()
	if ok && (lim.Bytes <= 0 || lim.Source == "") {
		t.Errorf("Available() = %+v", lim)
	}
}
