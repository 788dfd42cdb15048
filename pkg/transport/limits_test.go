package transport

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestLimiter(t *testing.T) {
	l := newLimiter(Limits{Rate: 10, Burst: 2, Concurrent: 3})
	now := time.Unix(0, 0)
	l.now = func() time.Time { return now }
	r1, err := l.acquire("a")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := l.acquire("a")
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.acquire("a") // burst of 2 spent
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted || len(st.Details()) != 1 {
		t.Fatalf("third request = %v, want ResourceExhausted with a RetryInfo", err)
	}
	if d := st.Details()[0].(*errdetails.RetryInfo).GetRetryDelay().AsDuration(); d != 100*time.Millisecond {
		t.Errorf("retry hint = %s, want 100ms (one token at 10/s)", d)
	}
	if _, err := l.acquire("b"); err != nil {
		t.Errorf("another identity is limited too: %v", err)
	}
	now = now.Add(time.Second) // refill
	r3, err := l.acquire("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.acquire("a"); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("fourth concurrent request = %v, want ResourceExhausted (3 in flight)", err)
	}
	r1()
	r2()
	r3()
	if _, err := l.acquire("a"); err != nil {
		t.Errorf("after releases: %v", err)
	}
}

func TestLimiterEvictsIdleBuckets(t *testing.T) {
	l := newLimiter(Limits{Rate: 100, Burst: 1})
	now := time.Unix(0, 0)
	l.now = func() time.Time { return now }
	for i := 0; i < maxBuckets; i++ {
		release, err := l.acquire(fmt.Sprint("id-", i))
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	now = now.Add(time.Second) // every bucket has refilled
	if _, err := l.acquire("newcomer"); err != nil {
		t.Fatal(err)
	}
	if n := len(l.ids); n != 1 {
		t.Errorf("after eviction %d buckets remain, want only the newcomer's", n)
	}
}
