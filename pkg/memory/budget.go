// Package memory treats the curator's memory as a budget, like its privacy budget: a
// release states before it is computed how many bytes it will hold (its need), and a
// Budget admits it only while the needs of the releases admitted together stay within
// a limit. A need larger than the whole limit is refused at once, with the numbers
// (*LimitError); a need that fits the limit but not what the others leave waits, first
// come first served, for as long as its context allows, and gives up a little before
// its context's deadline with a *WaitError, so that its caller can still say why.
//
// Available finds the memory the process may use: the memory limit of its cgroup
// (version 2 memory.max, version 1 memory.limit_in_bytes, the smallest along the path
// from its cgroup to the root) or else the machine's physical memory.
package memory

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"
)

// Budget is a semaphore of bytes, safe for concurrent use. Waiters are served in the
// order they came: a large need at the head of the queue is not overtaken by smaller
// ones behind it, so it is never starved. The nil *Budget admits everything.
type Budget struct {
	mu       sync.Mutex
	capacity int64
	held     int64
	queue    list.List // of *waiter, in arrival order
	waits    int64     // needs that had to wait, since the budget was made
}

type waiter struct {
	need  int64
	ready chan struct{} // closed when the bytes are granted
}

// NewBudget returns a budget of capacity bytes; it panics if capacity < 1.
func NewBudget(capacity int64) *Budget {
	if capacity < 1 {
		panic(fmt.Sprintf("memory: budget of %d bytes", capacity))
	}
	return &Budget{capacity: capacity}
}

// LimitError is the refusal of a need larger than the whole budget: it can never be
// admitted, however long it waits.
type LimitError struct {
	Need, Capacity int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("memory: %s needed, more than the %s admitted at once", MiB(e.Need), MiB(e.Capacity))
}

// WaitError is a need that was still waiting when its context ended (or was about to
// end: see Acquire): the needs admitted before it held the memory all along. It wraps
// the context's error.
type WaitError struct {
	// Need is the bytes asked for; Held what was admitted to others when it gave up, of
	// Capacity.
	Need, Held, Capacity int64
	Err                  error
}

func (e *WaitError) Error() string {
	return fmt.Sprintf("memory: %s needed was not admitted in time: %s of the %s admitted at once were held", MiB(e.Need), MiB(e.Held), MiB(e.Capacity))
}

// Unwrap returns the context's error.
func (e *WaitError) Unwrap() error { return e.Err }

// giveUpEarly is how long before its context's deadline a waiting need gives up: a
// tenth of the time left when it starts waiting, at most this much.
const giveUpEarly = time.Second

// giveUpAt is when a need waiting from now gives up under deadline: a tenth of the time
// left before it, at most giveUpEarly.
func giveUpAt(deadline, now time.Time) time.Time {
	return deadline.Add(-min(deadline.Sub(now)/10, giveUpEarly))
}

// MiB formats a number of bytes in mebibytes for people.
func MiB(bytes int64) string {
	v := float64(bytes) / (1 << 20)
	if v >= 100 || v == float64(int64(v)) {
		return fmt.Sprintf("%.0f MiB", v)
	}
	return fmt.Sprintf("%.1f MiB", v)
}

// TryAcquire admits need bytes if they fit now and nobody is waiting before it, and
// returns the function that gives them back (it may be called more than once; only the
// first call counts). ok is false otherwise, and nothing is held.
func (b *Budget) TryAcquire(need int64) (release func(), ok bool) {
	if b == nil {
		return func() {}, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if need <= b.capacity && b.queue.Len() == 0 && b.held+need <= b.capacity {
		b.held += need
		return b.releaser(need), true
	}
	return nil, false
}

// Acquire admits need bytes, waiting for the releases admitted before to give back
// enough, in arrival order. It returns a *LimitError at once if need exceeds the
// capacity, and a *WaitError if ctx ends first (nothing is held then); a need waiting
// under a deadline gives up a tenth of the time left before it (at most giveUpEarly),
// so that the caller can still answer before its client's deadline. The returned
// function gives the bytes back; it may be called more than once.
func (b *Budget) Acquire(ctx context.Context, need int64) (release func(), err error) {
	if b == nil {
		return func() {}, nil
	}
	if need > b.capacity {
		return nil, &LimitError{Need: need, Capacity: b.capacity}
	}
	need = max(need, 0)
	b.mu.Lock()
	if b.queue.Len() == 0 && b.held+need <= b.capacity {
		b.held += need
		b.mu.Unlock()
		return b.releaser(need), nil
	}
	if err := ctx.Err(); err != nil {
		defer b.mu.Unlock()
		return nil, &WaitError{Need: need, Held: b.held, Capacity: b.capacity, Err: err}
	}
	w := &waiter{need: need, ready: make(chan struct{})}
	elem := b.queue.PushBack(w)
	b.waits++
	b.mu.Unlock()
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, giveUpAt(d, time.Now()))
		defer cancel()
	}

	select {
	case <-w.ready:
		return b.releaser(need), nil
	case <-ctx.Done():
		b.mu.Lock()
		select {
		case <-w.ready:
			// Granted while ctx ended: give the bytes back.
			b.held -= need
		default:
			b.queue.Remove(elem)
		}
		// Leaving the queue (or giving bytes back) may let the next waiters in.
		b.grantLocked()
		defer b.mu.Unlock()
		return nil, &WaitError{Need: need, Held: b.held, Capacity: b.capacity, Err: ctx.Err()}
	}
}

// releaser returns the idempotent function giving need bytes back.
func (b *Budget) releaser(need int64) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.held -= need
			b.grantLocked()
			b.mu.Unlock()
		})
	}
}

// grantLocked admits waiters from the head of the queue while they fit.
func (b *Budget) grantLocked() {
	for e := b.queue.Front(); e != nil; e = b.queue.Front() {
		w := e.Value.(*waiter)
		if b.held+w.need > b.capacity {
			return
		}
		b.held += w.need
		b.queue.Remove(e)
		close(w.ready)
	}
}

// Capacity is the budget's size in bytes (0 for the nil Budget, which admits
// everything).
func (b *Budget) Capacity() int64 {
	if b == nil {
		return 0
	}
	return b.capacity
}

// Held is the number of bytes admitted and not given back.
func (b *Budget) Held() int64 { return read(b, func() int64 { return b.held }) }

// Waits is the number of needs that had to wait since the budget was made (0 for the
// nil Budget): those admitted after a wait, and those that gave up waiting.
func (b *Budget) Waits() int64 { return read(b, func() int64 { return b.waits }) }

// Waiting is the number of needs waiting to be admitted.
func (b *Budget) Waiting() int { return read(b, func() int { return b.queue.Len() }) }

// read is what f reads of b under its lock; 0 for the nil Budget.
func read[T int | int64](b *Budget, f func() T) T {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return f()
}
