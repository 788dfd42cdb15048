package study

import "fmt"

// Recommendation is a study's recommended row as package modeler computes it
// (modeler.Replay): the queried row with the best posterior mean, which the report shows
// first. This package fits no GP; it only presents the figures.
type Recommendation struct {
	// Index is the recommended row; Mean and SD are the GP's posterior mean and standard
	// deviation of the objective at that row, in the answers' units.
	Index int     `json:"index"`
	Mean  float64 `json:"posterior_mean"`
	SD    float64 `json:"posterior_sd"`
	// AnswerNoiseSD is the standard deviation of the noise in each answer (0 for exact
	// answers, or when it could not be computed from the curator's settings).
	AnswerNoiseSD float64 `json:"answer_noise_sd"`
}

// AnswerNoiseText says what answers released under op, each with noise of standard
// deviation sd, can tell about their rows: the noise against the width of the target's
// public range [L, U] the answers are clipped to. Both parties can compute it: it
// depends only on public settings.
func AnswerNoiseText(op OutputPrivacy, sd float64) string {
	if op.Exact() {
		return "none: the answers are exact (output privacy none), so each answer is its row's value"
	}
	width := op.Upper - op.Lower
	if !(sd > 0) || !(width > 0) {
		return fmt.Sprintf("%s mechanism (its noise could not be computed from the curator's settings)", op.Mechanism)
	}
	ratio := sd / width
	says := "a single answer is close to its row's value"
	if ratio >= 0.1 {
		says = "a single answer says little about its row (the most extreme answers are mostly the luckiest noise draws), so the recommendation pools every answer through the GP"
	}
	share := fmt.Sprintf("%.2g of its width", ratio)
	switch {
	case ratio >= 10:
		share = fmt.Sprintf("%.0f times its width", ratio)
	case ratio >= 1:
		share = fmt.Sprintf("%.2g times its width", ratio)
	}
	return fmt.Sprintf("sd %s per answer (%s mechanism) against the target's range [%s, %s]: %s; %s",
		g3(sd), op.Mechanism, g(op.Lower), g(op.Upper), share, says)
}
