package memory

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
)

// Limit is the memory available to the process and where that figure comes from.
type Limit struct {
	Bytes int64
	// Source names the file the figure was read from, for the operator's log: a cgroup's
	// memory.max or memory.limit_in_bytes, or /proc/meminfo (physical memory).
	Source string
}

// unlimitedV1 is where cgroup v1 reports "no limit" (PAGE_COUNTER_MAX pages, just below
// 2⁶³ rounded to a page); anything at or above 2⁶² is taken as no limit.
const unlimitedV1 = 1 << 62

// Available returns the memory this process may use: the smallest memory limit of the
// cgroups from its own up to the root (cgroup v2 memory.max; cgroup v1
// memory.limit_in_bytes, or its hierarchical_memory_limit), or, when there is none, the
// machine's physical memory (MemTotal of /proc/meminfo). ok is false when neither is
// known (a system without /proc).
func Available() (lim Limit, ok bool) { return available(os.DirFS("/")) }

// available is Available with the file system rooted at root (tests give a fake one).
func available(root fs.FS) (Limit, bool) {
	phys, physOK := memTotal(root)
	cg, cgOK := cgroupLimit(root)
	switch {
	case cgOK && (!physOK || cg.Bytes < phys.Bytes):
		return cg, true
	case physOK:
		return phys, true
	}
	return Limit{}, false
}

// memTotal reads MemTotal from /proc/meminfo.
func memTotal(root fs.FS) (Limit, bool) {
	b, err := fs.ReadFile(root, "proc/meminfo")
	if err != nil {
		return Limit{}, false
	}
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(line, "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return Limit{}, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb <= 0 {
			return Limit{}, false
		}
		return Limit{Bytes: kb << 10, Source: "/proc/meminfo MemTotal (physical memory)"}, true
	}
	return Limit{}, false
}

// cgroupMount is a cgroup file system mount: where it is mounted and which cgroup its
// root is (not "/" when the process sees its parent's hierarchy without a cgroup
// namespace).
type cgroupMount struct {
	point, root string
	v2          bool
}

// cgroupLimit returns the smallest memory limit on the path from the process's memory
// cgroup to the root, or false when there is none.
func cgroupLimit(root fs.FS) (Limit, bool) {
	self, err := fs.ReadFile(root, "proc/self/cgroup")
	if err != nil {
		return Limit{}, false
	}
	mounts := cgroupMounts(root)
	var best Limit
	found := false
	consider := func(l Limit, ok bool) {
		if ok && (!found || l.Bytes < best.Bytes) {
			best, found = l, true
		}
	}
	for line := range strings.Lines(string(self)) {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		v2 := parts[0] == "0" && parts[1] == ""
		memory := v2
		for c := range strings.SplitSeq(parts[1], ",") {
			memory = memory || c == "memory"
		}
		if !memory {
			continue
		}
		for _, m := range mounts {
			if m.v2 == v2 {
				consider(mountLimit(root, m, parts[2]))
			}
		}
	}
	return best, found
}

// cgroupMounts lists the cgroup v2 mounts and the cgroup v1 mounts of the memory
// controller, from /proc/self/mountinfo.
func cgroupMounts(root fs.FS) []cgroupMount {
	b, err := fs.ReadFile(root, "proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []cgroupMount
	for line := range strings.Lines(string(b)) {
		// ID parent major:minor root mount-point options [optional…] - fstype source super-options
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		switch {
		case g[0] == "cgroup2":
			out = append(out, cgroupMount{point: f[4], root: f[3], v2: true})
		case g[0] == "cgroup" && hasOption(g[2], "memory"):
			out = append(out, cgroupMount{point: f[4], root: f[3]})
		}
	}
	return out
}

func hasOption(opts, name string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// mountLimit reads the memory limits of cgroup and of its ancestors under mount m.
func mountLimit(root fs.FS, m cgroupMount, cgroup string) (Limit, bool) {
	rel := cgroup
	if m.root != "/" {
		r, ok := strings.CutPrefix(cgroup, m.root)
		if !ok || (r != "" && r[0] != '/') {
			return Limit{}, false // the process's cgroup is not under this mount
		}
		rel = r
	}
	dir := path.Join(strings.TrimPrefix(m.point, "/"), path.Clean("/"+rel))
	top := path.Clean(strings.TrimPrefix(m.point, "/"))
	var best Limit
	found := false
	for {
		var l Limit
		var ok bool
		if m.v2 {
			l, ok = readLimit(root, path.Join(dir, "memory.max"))
		} else {
			l, ok = readLimit(root, path.Join(dir, "memory.limit_in_bytes"))
			if h, hok := hierarchicalLimit(root, dir); hok && (!ok || h.Bytes < l.Bytes) {
				l, ok = h, true
			}
		}
		if ok && (!found || l.Bytes < best.Bytes) {
			best, found = l, true
		}
		if dir == top || dir == "." || dir == "/" {
			return best, found
		}
		dir = path.Dir(dir)
	}
}

// readLimit reads a limit file: a number of bytes, or "max" (cgroup v2) or a value of
// 2⁶² or more (cgroup v1) for no limit.
func readLimit(root fs.FS, name string) (Limit, bool) {
	b, err := fs.ReadFile(root, name)
	if err != nil {
		return Limit{}, false
	}
	s := string(bytes.TrimSpace(b))
	if s == "max" {
		return Limit{}, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || v >= unlimitedV1 {
		return Limit{}, false
	}
	return Limit{Bytes: v, Source: "/" + name}, true
}

// hierarchicalLimit reads cgroup v1's hierarchical_memory_limit from dir/memory.stat:
// the smallest limit of the cgroup and its ancestors.
func hierarchicalLimit(root fs.FS, dir string) (Limit, bool) {
	f, err := root.Open(path.Join(dir, "memory.stat"))
	if err != nil {
		return Limit{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "hierarchical_memory_limit ")
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
		if err != nil || v <= 0 || v >= unlimitedV1 {
			return Limit{}, false
		}
		return Limit{Bytes: v, Source: fmt.Sprintf("/%s/memory.stat hierarchical_memory_limit", dir)}, true
	}
	return Limit{}, false
}
