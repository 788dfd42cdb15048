package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/privbo/privbo/internal/figure"
	"github.com/privbo/privbo/pkg/modeler"
)

// printQuote states the curator's quote of a study, before anything is charged, one
// fact a line of at most 300 characters: the projection it resolved and its noise, what
// it costs a whole patient, the answers and their noise against the target's range,
// the cost against what the identity can still spend, and how many of the curator's
// default studies its budgets hold.
func printQuote(w io.Writer, q *modeler.Quote) {
	f, up := figure.Text, figure.Up
	fmt.Fprintln(w, "study quoted by the curator (nothing is charged yet):")
	var chosen, def string
	if q.RChosen {
		chosen = " (chosen by the curator)"
	}
	switch {
	case q.DefaultEpsilon && q.DefaultDelta:
		def = " (the curator's default study)"
	case q.DefaultEpsilon:
		def = " (ε of the curator's default study)"
	case q.DefaultDelta:
		def = " (δ of the curator's default study)"
	}
	fmt.Fprintf(w, "  projection: r=%d%s, ε=%s, δ=%s%s, mechanism %s", q.R, chosen, f(q.Epsilon), f(q.Delta), def, q.Mechanism)
	if q.NoiseSD > 0 {
		fmt.Fprintf(w, ", noise sd %s per entry", f(q.NoiseSD))
	}
	if q.ProjectionPaid {
		fmt.Fprint(w, "; already released to this identity (replayed at no cost)")
	}
	fmt.Fprintln(w, ".")
	if q.WholePatientEpsilon > 0 {
		fmt.Fprintf(w, "  whole patient (%s): ε=%s, δ=%s%s.\n", unitsText(q.WholePatientUnits), up(q.WholePatientEpsilon), f(q.Delta), figure.WholeRecordWords(q.WholePatientEpsilon))
	}
	if a := q.Answers; a.Exact() {
		fmt.Fprintln(w, "  answers: exact and unprotected (no charge).")
	} else {
		paid := "paid with the projection"
		if a.Paid {
			paid = "already paid by this identity"
		}
		fmt.Fprintf(w, "  answers: %s, ε=%s, δ=%s once for all of them (%s), noise sd %s on the target's range [%s, %s].\n",
			a.Mechanism, f(a.Epsilon), f(a.Delta), paid, f(a.NoiseSD), f(a.Lower), f(a.Upper))
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
		fmt.Fprintf(w, "  cost under the %s relation: ε=%s, δ=%s; %s ε=%s, δ=%s: it %s.\n",
			c.Relation, up(c.Epsilon), up(c.Delta), who, f(c.EpsilonAvailable), f(c.DeltaAvailable), verdict)
	}
	if len(q.Charges) == 0 {
		fmt.Fprintln(w, "  cost: nothing new (the study is paid already).")
	}
	if d := q.DefaultStudy; d.ProjectionEpsilon > 0 {
		fmt.Fprintf(w, "  the curator's default study (projection ε=%s, δ=%s; answers ε=%s): %s one identity's budget, %s the dataset cap, and %s.\n",
			f(d.ProjectionEpsilon), f(d.ProjectionDelta), f(d.AnswersEpsilon), fitText(d.PerIdentity), fitText(d.Dataset), stillFit(d.DatasetLeft))
	}
}

// unitsText is a distance in protected units: "1 unit", "50 units".
func unitsText(u float64) string {
	if u == 1 {
		return "1 unit"
	}
	return figure.Text(u) + " units"
}

// fitText is "1 fits" or "n fit".
func fitText(n int) string {
	if n == 1 {
		return "1 fits"
	}
	return fmt.Sprintf("%d fit", n)
}

// stillFit is how many default studies still fit the dataset cap, in words.
func stillFit(n int) string {
	if n == 1 {
		return "1 of them still fits what is left of it"
	}
	return fmt.Sprintf("%d of them still fit what is left of it", n)
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
