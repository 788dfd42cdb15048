package curator

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/privbo/privbo/pkg/blob"
	"github.com/privbo/privbo/pkg/matrixio"
	"github.com/privbo/privbo/pkg/memory"
)

// MinMemory is the smallest Config.Memory budget New accepts: room for streaming any
// release (streamNeed), so that only a new release's computation can be refused.
const MinMemory = 16 << 20

// MemoryError is the refusal of a new release whose computation needs more memory than
// the curator admits for all its releases at once (Config.Memory): it could never be
// made, however long it waited. Nothing was computed or charged.
type MemoryError struct {
	// R is the projection dimension asked for, Rows the dataset's records, Mechanism
	// the projection mechanism.
	R, Rows   int
	Mechanism string
	// Need is the release's memory in bytes while it is computed and stored; Limit what
	// the curator admits at once.
	Need, Limit int64
	// MaxR is the largest dimension such that every r ≤ MaxR fits (0: none does).
	MaxR int
}

func (e *MemoryError) Error() string {
	msg := fmt.Sprintf("this release (r = %d over %d rows, %s mechanism) needs %s of memory while it is computed and stored; "+
		"the curator admits %s for its releases at once", e.R, e.Rows, e.Mechanism, memory.MiB(e.Need), memory.MiB(e.Limit))
	if e.MaxR == 0 {
		return msg + "; no projection dimension fits: the curator's operator must raise its memory limit"
	}
	return fmt.Sprintf("%s; ask for r ≤ %d", msg, e.MaxR)
}

// computeNeed is the memory a new release of dimension r holds while it is computed and
// stored: the projection's (projection.MemoryNeed: two windows of rows, M, the lifted
// mechanism's factorisation) and the store's (blob.PutMemory: a file's write buffer, or
// PostgreSQL's chunks).
func (c *Curator) computeNeed(r int) int64 {
	return c.proj.MemoryNeed(c.ds.N, c.ds.D, r) + blob.PutMemory(c.releases)
}

// streamNeed is the memory of reading a stored rows×cols release to a client: the
// stored reader's (blob.OpenMemory), and three chunks of the stream (the chunk read,
// its encoded message, and the message before it waiting in the transport).
func streamNeed(store blob.Store, rows, cols int) int64 {
	chunk := min(8*int64(rows)*int64(cols), 8*int64(matrixio.RowsPerChunk(cols))*int64(cols))
	return 3*chunk + blob.OpenMemory(store)
}

// maxDimension is the largest r such that every projection dimension up to it that the
// curator releases fits its memory (0 when none does).
func (c *Curator) maxDimension() int {
	limit := widest(c.cfg, c.proj)
	capacity := c.cfg.Memory.Capacity()
	r := 0
	for r < limit && c.computeNeed(r+1) <= capacity {
		r++
	}
	return r
}

// admit holds the memory of a new release of req (computeNeed), waiting for the releases
// admitted before to give back enough; waited says whether it had to. A release that can
// never fit is refused at once with a *MemoryError.
func (c *Curator) admit(ctx context.Context, req ProjectionRequest) (release func(), waited bool, err error) {
	need := c.computeNeed(req.R)
	if release, ok := c.cfg.Memory.TryAcquire(need); ok {
		return release, false, nil
	}
	release, err = c.cfg.Memory.Acquire(ctx, need)
	var le *memory.LimitError
	if errors.As(err, &le) {
		return nil, false, &MemoryError{R: req.R, Rows: c.ds.N, Mechanism: c.cfg.ProjectionMechanism, Need: need, Limit: le.Capacity, MaxR: c.maxDimension()}
	}
	if err != nil {
		return nil, false, fmt.Errorf("curator: waiting for memory: %w", err)
	}
	return release, true, nil
}

// heldReader is a stored release's reader holding the memory of its stream until it is
// closed.
type heldReader struct {
	io.ReadCloser
	release func()
}

func (h *heldReader) Close() error {
	err := h.ReadCloser.Close()
	h.release()
	return err
}
