package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/refusal"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// errorInfo is the curator's ErrorInfo of a status error (nil if none).
func errorInfo(err error) *errdetails.ErrorInfo {
	for _, d := range status.Convert(err).Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetDomain() == refusal.Domain {
			return ei
		}
	}
	return nil
}

// TestReleaseMemoryLimit runs a real curator process over a synthetic file of 20,000
// rows of 10 features with the lifted mechanism (the one that releases r > d), told it
// may use 128 MiB (--memory-limit, which also sets the Go runtime's soft limit to 90% of
// it) and 56 MiB for its releases at once (--release-memory). Asked for r = 1024, it
// refuses before computing anything: RESOURCE_EXHAUSTED, reason MEMORY_LIMIT, the bytes
// needed and admitted and the largest r that fits as metadata, nothing charged. Asked
// for that r, it serves a release larger than its whole memory limit (about 150 MB of
// matrix; it computes it a window of rows at a time and streams it from the store),
// with its peak resident memory (VmHWM) within the limit, and stays up. (The same at
// 10⁶ rows and a 2 GiB limit is BenchmarkReleaseMemory's large case.)
func TestReleaseMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a real curator")
	}
	const n, d = 20000, 10
	const memoryLimit, releaseMemory = 128 << 20, 56 << 20
	bin := buildBinary(t, "./cmd/curator")
	data := syntheticCSV(t, t.TempDir(), n, d)
	c := startRealCurator(t, bin, "--data", data, "--target", "y", "--dataset-id", "memory", "--state", t.TempDir(),
		"--budget-epsilon", "100", "--budget-delta", "0.5", "--scaling", "none", "--output-lower", "-10", "--output-upper", "10",
		"--projection-mechanism", "lifted", "--memory-limit", strconv.Itoa(memoryLimit), "--release-memory", "56MiB")
	defer c.kill()
	ctx := context.Background()
	client := curatorv1.NewCuratorServiceClient(dial(t, c.addr, "vendor"))

	_, err := drainRelease(ctx, client, 1024)
	ei := errorInfo(err)
	if status.Code(err) != codes.ResourceExhausted || ei.GetReason() != string(refusal.MemoryLimit) {
		t.Fatalf("r = 1024 with %d bytes for releases: %v (reason %q), want RESOURCE_EXHAUSTED, MEMORY_LIMIT", releaseMemory, err, ei.GetReason())
	}
	meta := ei.GetMetadata()
	needed, _ := strconv.ParseInt(meta["needed_bytes"], 10, 64)
	available, _ := strconv.ParseInt(meta["available_bytes"], 10, 64)
	maxR, _ := strconv.Atoi(meta["max_dimension"])
	if available != releaseMemory || needed <= available || meta["dimension"] != "1024" || maxR < 2 || maxR >= 1024 {
		t.Errorf("refusal metadata %v: want needed_bytes above available_bytes = %d, dimension 1024, 1 < max_dimension < 1024", meta, releaseMemory)
	}
	msg := status.Convert(err).Message()
	if !strings.Contains(msg, fmt.Sprintf("ask for r ≤ %d", maxR)) || !strings.Contains(msg, "MiB") || strings.Contains(msg, "--") {
		t.Errorf("refusal %q: want the memory in MiB and 'ask for r ≤ %d', and no flag of the curator", msg, maxR)
	}
	b, err := client.GetBudget(ctx, &curatorv1.GetBudgetRequest{})
	if err != nil || b.GetBudget().GetEpsilonSpent() != 0 {
		t.Errorf("after the refusal: spent %v, %v; want nothing charged", b.GetBudget().GetEpsilonSpent(), err)
	}

	got, err := drainRelease(ctx, client, maxR)
	if err != nil {
		t.Fatalf("r = max_dimension = %d: %v", maxR, err)
	}
	if want := int64(8 * n * maxR); got != want || want <= memoryLimit {
		t.Errorf("r = %d: received %d bytes, want %d (more than the memory limit %d)", maxR, got, want, memoryLimit)
	}
	peak, alive := procStatusMiB(t, c.cmd.Process.Pid, "VmHWM")
	if !alive {
		t.Fatal("the curator is gone after the release")
	}
	if peak > memoryLimit>>20 {
		t.Errorf("peak resident memory %.0f MiB, above the %d MiB limit", peak, memoryLimit>>20)
	}
	t.Logf("r = %d (%d MiB of matrix) served with a peak resident memory of %.0f MiB", maxR, got>>20, peak)
	if b, err := client.GetBudget(ctx, &curatorv1.GetBudgetRequest{}); err != nil || b.GetBudget().GetEpsilonSpent() != 1 {
		t.Errorf("after the release: spent %v, %v; want its ε = 1, and the curator up", b.GetBudget().GetEpsilonSpent(), err)
	}
}
