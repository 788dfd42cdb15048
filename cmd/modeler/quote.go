package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/privbo/privbo/pkg/modeler"
)

// printQuote states the curator's quote of a study, before anything is charged: the
// projection it resolved and its noise, the answers and their noise against the
// target's public range, the cost against what the identity can still spend, and how
// many of the curator's default studies its budgets hold.
func printQuote(w io.Writer, q *modeler.Quote) {
	fmt.Fprintln(w, "study quoted by the curator (nothing is charged yet):")
	var chosen, def string
	if q.RChosen {
		chosen = " (chosen by the curator from n, d, ε, δ)"
	}
	switch {
	case q.DefaultEpsilon && q.DefaultDelta:
		def = " (the curator's default study)"
	case q.DefaultEpsilon:
		def = " (ε of the curator's default study)"
	case q.DefaultDelta:
		def = " (δ of the curator's default study, within what this identity can spend)"
	}
	fmt.Fprintf(w, "  projection: r=%d%s, ε=%g, δ=%g%s, mechanism %s", q.R, chosen, q.Epsilon, q.Delta, def, q.Mechanism)
	if q.NoiseSD > 0 {
		fmt.Fprintf(w, ": noise sd %.4g per entry", q.NoiseSD)
	}
	if q.WholePatientEpsilon > 0 {
		fmt.Fprintf(w, "; a whole patient (%g units) is protected at ε=%.4g, δ=%g", q.WholePatientUnits, q.WholePatientEpsilon, q.Delta)
	}
	if q.ProjectionPaid {
		fmt.Fprint(w, "; already released to this identity (replayed at no cost)")
	}
	fmt.Fprintln(w)
	if a := q.Answers; a.Exact() {
		fmt.Fprintln(w, "  answers: exact, unprotected (no charge)")
	} else {
		paid := "paid with the projection"
		if a.Paid {
			paid = "already paid by this identity"
		}
		fmt.Fprintf(w, "  answers: %s, ε=%g, δ=%g once for all of them (%s): answer noise sd %.4g against the target's public range [%g, %g]\n",
			a.Mechanism, a.Epsilon, a.Delta, paid, a.NoiseSD, a.Lower, a.Upper)
	}
	if !q.Answers.Exact() {
		fmt.Fprintf(w, "  worth: %s\n", q.Worth())
	}
	for _, c := range q.Charges {
		verdict, who := "fits", "this identity can spend"
		if !c.Fits {
			verdict = "does NOT fit"
		}
		if c.Scope == "dataset" {
			who = "the dataset's cap, shared by every identity, leaves"
		}
		fmt.Fprintf(w, "  cost under the %s relation: ε=%g, δ=%g; %s ε=%g, δ=%g: %s\n",
			c.Relation, c.Epsilon, c.Delta, who, c.EpsilonAvailable, c.DeltaAvailable, verdict)
	}
	if len(q.Charges) == 0 {
		fmt.Fprintln(w, "  cost: nothing new (the study is paid already)")
	}
	if d := q.DefaultStudy; d.ProjectionEpsilon > 0 {
		fmt.Fprintf(w, "  the curator's default study (projection ε=%g, δ=%g; answers ε=%g): %d fit one identity's budget, %d the dataset cap, %d of them still\n",
			d.ProjectionEpsilon, d.ProjectionDelta, d.AnswersEpsilon, d.PerIdentity, d.Dataset, d.DatasetLeft)
	}
}

// dryRun has the study cfg asks for quoted (printed by cfg.Quoted) and stops: nothing is
// charged and no study is stored. A study the budget cannot pay returns its refusal.
func dryRun(ctx context.Context, cur modeler.Curator, cfg modeler.Config, asJSON bool, stdout, stderr io.Writer) error {
	q, err := modeler.QuoteStudy(ctx, cur, cfg)
	if q != nil && asJSON {
		b, jerr := json.Marshal(q)
		if jerr != nil {
			return jerr
		}
		fmt.Fprintln(stdout, string(b))
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(stderr, "dry run: nothing was charged")
	return nil
}
