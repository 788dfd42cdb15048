package memory

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor returns once b has n waiters; the test's deadline bounds it.
func waitFor(b *Budget, n int) {
	for b.Waiting() != n {
		runtime.Gosched()
	}
}

func TestBudgetRefusesWhatNeverFits(t *testing.T) {
	b := NewBudget(100)
	_, err := b.Acquire(context.Background(), 101)
	var le *LimitError
	if !errors.As(err, &le) || le.Need != 101 || le.Capacity != 100 {
		t.Fatalf("Acquire(101) of 100 = %v, want a LimitError{101, 100}", err)
	}
	if b.Held() != 0 || b.Waiting() != 0 {
		t.Errorf("after a refusal Held() = %d, Waiting() = %d; want 0, 0", b.Held(), b.Waiting())
	}
	rel, err := b.Acquire(context.Background(), 100)
	if err != nil {
		t.Fatalf("Acquire(100) of 100 = %v", err)
	}
	rel()
	rel() // a second call gives nothing back twice
	if b.Held() != 0 {
		t.Errorf("Held() = %d after releasing twice, want 0", b.Held())
	}
}

// TestBudgetFIFO: a need that does not fit waits; later ones wait behind it even when
// they would fit (no starvation of large needs), and are admitted in order.
func TestBudgetFIFO(t *testing.T) {
	b := NewBudget(100)
	first, _ := b.Acquire(context.Background(), 60)
	order := make(chan int, 2)
	var wg sync.WaitGroup
	wg.Go(func() {
		rel, err := b.Acquire(context.Background(), 70) // does not fit beside 60
		if err != nil {
			t.Error(err)
			return
		}
		order <- 70
		rel()
	})
	waitFor(b, 1)
	if _, ok := b.TryAcquire(10); ok {
		t.Error("TryAcquire(10) overtook a waiter")
	}
	wg.Go(func() {
		rel, err := b.Acquire(context.Background(), 40) // would fit beside 60, but 70 waits first
		if err != nil {
			t.Error(err)
			return
		}
		order <- 40
		rel()
	})
	waitFor(b, 2)
	if got := b.Held(); got != 60 {
		t.Errorf("Held() = %d while two wait, want 60", got)
	}
	first()
	wg.Wait()
	close(order)
	var got []int
	for v := range order {
		got = append(got, v)
	}
	// 40 does not fit beside 70: it is admitted only once 70 has sent and released.
	if len(got) != 2 || got[0] != 70 {
		t.Errorf("admitted in order %v, want 70 first", got)
	}
	if b.Held() != 0 {
		t.Errorf("Held() = %d at the end, want 0", b.Held())
	}
}

// TestBudgetCancel: a waiter whose context ends leaves the queue holding nothing, and
// the waiters behind it move up.
func TestBudgetCancel(t *testing.T) {
	b := NewBudget(100)
	hold, _ := b.Acquire(context.Background(), 50)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := b.Acquire(ctx, 80) // at the head of the queue
		errc <- err
	}()
	waitFor(b, 1)
	admitted := make(chan func(), 1)
	go func() {
		rel, err := b.Acquire(context.Background(), 40) // fits beside 50, behind 80
		if err != nil {
			t.Error(err)
		}
		admitted <- rel
	}()
	waitFor(b, 2)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Acquire = %v, want context.Canceled", err)
	}
	rel := <-admitted // admitted once the head left
	if got := b.Held(); got != 90 {
		t.Errorf("Held() = %d, want 90 (50 + 40; the cancelled 80 holds nothing)", got)
	}
	rel()
	hold()
	if _, err := b.Acquire(ctx, 10); err != nil {
		t.Errorf("Acquire with an ended context but room at once = %v, want success", err)
	}
}

// TestBudgetWaitError: a need still waiting when its context ends says so, with the
// figures, and counts among the waits; one admitted at once does not count.
func TestBudgetWaitError(t *testing.T) {
	b := NewBudget(100)
	hold, _ := b.Acquire(context.Background(), 70)
	defer hold()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := b.Acquire(ctx, 40)
	var we *WaitError
	if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) || *we != (WaitError{Need: 40, Held: 70, Capacity: 100, Err: we.Err}) {
		t.Fatalf("Acquire(40) beside 70 of 100 until the deadline = %v, want a WaitError{40, 70, 100} wrapping DeadlineExceeded", err)
	}
	if b.Waits() != 1 || b.Waiting() != 0 || b.Held() != 70 {
		t.Errorf("Waits() = %d, Waiting() = %d, Held() = %d; want 1, 0, 70", b.Waits(), b.Waiting(), b.Held())
	}
	rel, err := b.Acquire(context.Background(), 30)
	if err != nil {
		t.Fatal(err)
	}
	rel()
	if b.Waits() != 1 {
		t.Errorf("Waits() = %d after a need admitted at once, want 1", b.Waits())
	}
}

// TestGiveUpAt: a waiting need gives up a tenth of the time left before its deadline,
// at most a second, so that its caller can still answer.
func TestGiveUpAt(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tt := range []struct{ left, want time.Duration }{
		{2 * time.Second, 1800 * time.Millisecond},
		{20 * time.Second, 19 * time.Second},
		{time.Hour, time.Hour - time.Second},
		{0, 0},
	} {
		if got := giveUpAt(now.Add(tt.left), now).Sub(now); got != tt.want {
			t.Errorf("giveUpAt(now+%v) = now+%v, want now+%v", tt.left, got, tt.want)
		}
	}
}

// TestBudgetConcurrent: many goroutines acquiring and releasing never hold more than the
// capacity together.
func TestBudgetConcurrent(t *testing.T) {
	const capacity = 1000
	b := NewBudget(capacity)
	var inUse, peak atomic.Int64
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := range 200 {
				need := int64(1 + (g*37+i*11)%capacity)
				rel, err := b.Acquire(context.Background(), need)
				if err != nil {
					t.Error(err)
					return
				}
				v := inUse.Add(need)
				for p := peak.Load(); v > p && !peak.CompareAndSwap(p, v); p = peak.Load() {
				}
				inUse.Add(-need)
				rel()
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > capacity {
		t.Errorf("%d bytes held at once, capacity %d", p, capacity)
	}
	if b.Held() != 0 || b.Waiting() != 0 {
		t.Errorf("Held() = %d, Waiting() = %d at the end", b.Held(), b.Waiting())
	}
}

func TestNilBudget(t *testing.T) {
	var b *Budget
	rel, err := b.Acquire(context.Background(), 1<<60)
	if err != nil {
		t.Fatal(err)
	}
	rel()
	if _, ok := b.TryAcquire(1 << 60); !ok || b.Capacity() != 0 || b.Held() != 0 || b.Waits() != 0 || b.Waiting() != 0 {
		t.Error("the nil Budget does not admit everything")
	}
}

func TestMiB(t *testing.T) {
	for _, tt := range []struct {
		bytes int64
		want  string
	}{{1 << 20, "1 MiB"}, {3 << 19, "1.5 MiB"}, {812 << 20, "812 MiB"}, {123456789, "118 MiB"}, {0, "0 MiB"}} {
		if got := MiB(tt.bytes); got != tt.want {
			t.Errorf("MiB(%d) = %q, want %q", tt.bytes, got, tt.want)
		}
	}
}
