package curator

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/ledger"
)

// DefaultReservationOwner is Config.ReservationOwner's default: the host's name
// ("curator" if it has none).
func DefaultReservationOwner() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "curator"
}

// RecoverReservations frees, at a start, the ledger reservations this curator's
// owner (Config.ReservationOwner) left held on its dataset by a crash, and the
// expired ones; it returns how many it removed.
func (c *Curator) RecoverReservations(ctx context.Context) (int, error) {
	n, err := c.ledger.DropReservations(ctx, c.cfg.DatasetID, c.cfg.ReservationOwner)
	if err != nil {
		return 0, fmt.Errorf("curator: recovering reservations: %w", err)
	}
	if n > 0 {
		c.log.Info("reservations left by an earlier run, or expired, released", zap.Int("reservations", n),
			zap.String("owner", c.cfg.ReservationOwner))
	}
	return n, nil
}

// ReservationHold is how this curator holds its ledger reservations: its owner name
// and their time to live (for the jobs it runs, whose reservations a restart recovers
// with its own).
func (c *Curator) ReservationHold() ledger.Hold { return c.hold() }

// hold is the ledger.Hold of this curator's reservations.
func (c *Curator) hold() ledger.Hold {
	return ledger.Hold{Owner: c.cfg.ReservationOwner, TTL: c.cfg.ReservationTTL, Stored: c.cfg.Stored}
}

// reservation is a release's budget held in the ledger while it is computed
// (ledger.Ledger.Reserve): kept alive by extending it every third of its time to
// live, and cancelled by done unless it was committed.
type reservation struct {
	c         *Curator
	r         *ledger.Reservation
	stop      chan struct{}
	stopped   chan struct{}
	committed bool
}

// reserve holds the costs of charges in the ledger before anything is computed: a
// release that does not fit, counting the charges committed and the releases being
// computed, is refused here (a *ledger.BudgetError) and never touches the data.
func (c *Curator) reserve(ctx context.Context, charges []ledger.Charge) (*reservation, error) {
	r, err := c.ledger.Reserve(ctx, charges, c.hold())
	if err != nil {
		return nil, fmt.Errorf("curator: %w", err)
	}
	res := &reservation{c: c, r: r, stop: make(chan struct{}), stopped: make(chan struct{})}
	go res.keepAlive(context.WithoutCancel(ctx))
	return res, nil
}

func (res *reservation) keepAlive(ctx context.Context) {
	defer close(res.stopped)
	ttl := res.c.cfg.ReservationTTL
	t := time.NewTicker(max(ttl/3, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-res.stop:
			return
		case <-t.C:
			if err := res.c.ledger.Extend(ctx, res.r, ttl); err != nil {
				// The commit still checks the budget: a lapsed reservation only loses
				// its guarantee that the computed release will fit.
				res.c.log.Warn("extending a reservation", zap.Error(err))
				return
			}
		}
	}
}

// commit charges the release in the reservation's transaction (ledger.Ledger.Commit).
func (res *reservation) commit(ctx context.Context, charges []ledger.Charge) ([]ledger.Receipt, error) {
	recs, err := res.c.ledger.Commit(ctx, res.r, charges)
	if err != nil {
		return nil, err
	}
	res.committed = true
	return recs, nil
}

// done stops extending the reservation and, unless it was committed, cancels it: the
// budget of a release that failed is available again at once.
func (res *reservation) done(ctx context.Context) {
	close(res.stop)
	<-res.stopped
	if res.committed {
		return
	}
	if err := res.c.ledger.Cancel(context.WithoutCancel(ctx), res.r); err != nil {
		res.c.log.Warn("cancelling a reservation failed; it is retried while the ledger answers, and holds its budget until then or until it expires",
			zap.Time("expires", res.r.Expires), zap.Error(err))
	}
}
