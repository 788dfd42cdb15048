package curator

import (
	"fmt"

	"github.com/privbo/privbo/pkg/projection"
)

// CheckProjection reports whether ReleaseProjection could serve req, without touching
// the data or the ledger: its parameters, and with the Gaussian mechanism whether the
// noise can be calibrated for them (projection.CheckGaussian). Its errors wrap
// ErrInvalidArgument and say what to ask for instead. (With a simulation's projection
// source the noise is not checked: its matrix is not orthonormalised.)
func (c *Curator) CheckProjection(req ProjectionRequest) error {
	if err := c.validate(req); err != nil {
		return err
	}
	if c.cfg.SimulationProjectionSource != nil {
		return nil
	}
	if err := c.proj.Check(c.ds.N, c.ds.D, projection.Params{R: req.R, Epsilon: req.Epsilon, Delta: req.Delta}); err != nil {
		return fmt.Errorf("curator: %w: %w", ErrInvalidArgument, err)
	}
	return nil
}
