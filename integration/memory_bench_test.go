package integration

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// BenchmarkReleaseMemory measures the peak resident memory (VmHWM) of a real curator
// process making one projection release of n rows × r columns from a synthetic CSV of
// d = 10 features, the figures of docs/EXPERIMENTS.md ("Release memory"). Each case
// starts a fresh `curator serve`, reads its peak resident memory once it serves
// (load-peak-RSS-MiB: loading the dataset), resets the peak (/proc/PID/clear_refs) and
// reads its resident memory (base-RSS-MiB), asks for one release with a client that
// hashes the stream and keeps none of it, and reads the peak again (peak-RSS-MiB: the
// release's).
// A release the curator refuses is reported as refused=1 with the refusal's text in the
// log; a curator that dies is reported as died=1.
//
// Environment (all optional):
//
//	PRIVBO_MEMORY_ROWS      rows n, comma-separated (default 100000,1000000)
//	PRIVBO_MEMORY_DIMS      dimensions r, comma-separated (default 10,80,1024)
//	PRIVBO_MEMORY_MECH      projection mechanism (default lifted: the only one that
//	                        releases r > d; gaussian refuses r > d = 10)
//	PRIVBO_MEMORY_DATA_DIR  where the CSVs are written and kept between runs
//	                        (default: a temporary directory)
//	PRIVBO_CURATOR_BIN      the curator binary (default: built from this tree), e.g. one
//	                        built from an older commit for a before/after table
//	PRIVBO_MEMORY_ARGS      extra serve flags, space-separated (e.g. --release-memory 1GiB)
//	PRIVBO_MEMORY_AS        run the curator under `prlimit --as=BYTES` (e.g. 2147483648)
//	PRIVBO_MEMORY_ENV       extra environment, space-separated (e.g. GOMEMLIMIT=1800MiB)
//
// Example (the large case of issue 22: r = 1024 on 10⁶ rows under a 2 GiB address-space
// limit):
//
//	PRIVBO_MEMORY_ROWS=1000000 PRIVBO_MEMORY_DIMS=1024 PRIVBO_MEMORY_AS=2147483648 \
//	  go test -run '^$' -bench BenchmarkReleaseMemory -benchtime 1x ./integration
func BenchmarkReleaseMemory(b *testing.B) {
	if testing.Short() {
		b.Skip("writes large CSVs and starts real curators")
	}
	rows := envInts(b, "PRIVBO_MEMORY_ROWS", "100000,1000000")
	dims := envInts(b, "PRIVBO_MEMORY_DIMS", "10,80,1024")
	mech := os.Getenv("PRIVBO_MEMORY_MECH")
	if mech == "" {
		mech = "lifted"
	}
	dataDir := os.Getenv("PRIVBO_MEMORY_DATA_DIR")
	if dataDir == "" {
		dataDir = b.TempDir()
	}
	bin := os.Getenv("PRIVBO_CURATOR_BIN")
	if bin == "" {
		bin = buildBinary(b, "./cmd/curator")
	}
	const d = 10
	for _, n := range rows {
		data := syntheticCSV(b, dataDir, n, d)
		for _, r := range dims {
			b.Run(fmt.Sprintf("n=%d/r=%d", n, r), func(b *testing.B) {
				for b.Loop() {
					m := measureRelease(b, bin, data, mech, r)
					b.ReportMetric(m.load, "load-peak-RSS-MiB")
					b.ReportMetric(m.base, "base-RSS-MiB")
					b.ReportMetric(m.peak, "peak-RSS-MiB")
					b.ReportMetric(m.refused, "refused")
					b.ReportMetric(m.died, "died")
					b.ReportMetric(float64(n*r*8)/(1<<20), "release-MiB")
				}
			})
		}
	}
}

type releaseMemory struct{ load, base, peak, refused, died float64 }

// measureRelease starts a curator on data, releases one r-dimensional projection and
// returns the process's resident memory before and at its peak, in MiB.
func measureRelease(b *testing.B, bin, data, mech string, r int) releaseMemory {
	b.Helper()
	state := b.TempDir()
	addrFile := filepath.Join(state, "addr")
	args := []string{"serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--log-level", "warn",
		"--data", data, "--target", "y", "--dataset-id", "memory-bench", "--state", filepath.Join(state, "s"),
		"--budget-epsilon", "1e9", "--budget-delta", "0.99", "--scaling", "none",
		"--output-lower", "-1e6", "--output-upper", "1e6", "--projection-mechanism", mech,
		"--max-projection-dim", "100000"}
	args = append(args, strings.Fields(os.Getenv("PRIVBO_MEMORY_ARGS"))...)
	name := bin
	if as := os.Getenv("PRIVBO_MEMORY_AS"); as != "" {
		name, args = "prlimit", append([]string{"--as=" + as, "--", bin}, args...)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), strings.Fields(os.Getenv("PRIVBO_MEMORY_ENV"))...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-exited
	}()
	var addr string
	for deadline := time.Now().Add(5 * time.Minute); addr == ""; {
		if got, err := os.ReadFile(addrFile); err == nil && len(got) > 0 {
			addr = strings.TrimSpace(string(got))
			break
		}
		select {
		case err := <-exited:
			exited <- err
			b.Fatalf("curator exited before serving: %v\n%s", err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Fatalf("curator did not start; stderr:\n%s", stderr.String())
		}
	}
	pid := cmd.Process.Pid
	var m releaseMemory
	m.load, _ = procStatusMiB(b, pid, "VmHWM") // the peak so far: loading the dataset
	// Reset the high-water mark to the current resident memory (Linux's clear_refs), so
	// that the peak read after the release is the release's, not the loading's.
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		b.Logf("resetting the peak after loading: %v (peak-RSS-MiB includes the loading)", err)
	}
	m.base, _ = procStatusMiB(b, pid, "VmRSS")
	conn, err := transport.Dial(addr, transport.ClientConfig{Identity: "memory-bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	got, err := drainRelease(context.Background(), curatorv1.NewCuratorServiceClient(conn), r)
	peak, alive := procStatusMiB(b, pid, "VmHWM") // a process that has exited has none
	if alive {
		select {
		case werr := <-exited:
			exited <- werr
			alive = false
		default:
		}
	}
	if !alive {
		m.died = 1
		b.Logf("r=%d: the curator died (%v)\n%s", r, err, lastLines(stderr.String(), 8))
		return m
	}
	m.peak = peak
	switch {
	case err != nil:
		m.refused = 1
		b.Logf("r=%d: %v", r, err)
	case got != int64(r)*8*int64(rowsOf(b, data)):
		b.Fatalf("r=%d: received %d bytes", r, got)
	}
	return m
}

// drainRelease asks for a fresh projection of dimension r and reads its stream,
// checking the SHA-256 and keeping nothing; it returns the matrix bytes received.
func drainRelease(ctx context.Context, c curatorv1.CuratorServiceClient, r int) (int64, error) {
	stream, err := c.ReleaseProjection(ctx, &curatorv1.ReleaseProjectionRequest{Dimension: uint32(r), Epsilon: 1, Delta: 1e-6,
		Label: strconv.FormatInt(time.Now().UnixNano(), 36)})
	if err != nil {
		return 0, err
	}
	h := sha256.New()
	var n int64
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if c := msg.GetChunk(); c != nil {
			h.Write(c.GetData())
			n += int64(len(c.GetData()))
		}
		if t := msg.GetTrailer(); t != nil && string(t.GetSha256()) != string(h.Sum(nil)) {
			return n, fmt.Errorf("SHA-256 mismatch")
		}
	}
}

// procStatusMiB reads a "kB" field of /proc/PID/status in MiB; ok is false when the
// process is gone (or a zombie, whose status has no memory fields).
func procStatusMiB(b testing.TB, pid int, field string) (mib float64, ok bool) {
	b.Helper()
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(st)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024, true
		}
	}
	return 0, false
}

func lastLines(s string, k int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-k):], "\n")
}

// syntheticCSV writes (or reuses) dir/synthetic-n-d.csv: n rows of d standard normal
// features and a target y, from a fixed seed.
func syntheticCSV(b testing.TB, dir string, n, d int) string {
	b.Helper()
	path := filepath.Join(dir, fmt.Sprintf("synthetic-%d-%d.csv", n, d))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for j := range d {
		fmt.Fprintf(w, "x%d,", j)
	}
	w.WriteString("y\n")
	rng := rand.New(rand.NewPCG(uint64(n), uint64(d)))
	var buf []byte
	for range n {
		buf = buf[:0]
		for j := range d + 1 {
			buf = strconv.AppendFloat(buf, rng.NormFloat64(), 'g', 8, 64)
			if j < d {
				buf = append(buf, ',')
			}
		}
		buf = append(buf, '\n')
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	return path
}

// rowsOf reads n back from a syntheticCSV name.
func rowsOf(b *testing.B, path string) int {
	parts := strings.Split(strings.TrimSuffix(filepath.Base(path), ".csv"), "-")
	n, err := strconv.Atoi(parts[1])
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func envInts(b *testing.B, name, def string) []int {
	b.Helper()
	s := os.Getenv(name)
	if s == "" {
		s = def
	}
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		out = append(out, v)
	}
	return out
}
