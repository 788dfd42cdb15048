package config

import (
	"fmt"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/transport"
	"github.com/privbo/privbo/pkg/worth"
)

// Warnings are what an operator must be told before serving cfg: a data-dependent
// scaling named explicitly, and exact, unprotected query answers. server.Start logs each; cmd/curator also prints them on standard error.
func Warnings(cfg Config) []string {
	var w []string
	// The dataset's δ cap defaults to the identity's, so a zero identity δ is the
	// only way to a zero δ limit.
	if cfg.Budget.Epsilon > 0 && cfg.Budget.Delta == 0 {
		w = append(w, fmt.Sprintf("WARNING: Config.Budget.Delta is 0: every release that needs δ > 0 is refused whatever has been spent, among them the Gaussian projection "+
			"(Config.ProjectionMechanism gaussian, the default) and gaussian answers; only pure ε-DP releases (laplace answers) can be made. "+
			"Set Config.Budget.Delta above 0 (for instance %g, the curator command's default)", DefaultBudgetDelta))
	}
	if cfg.TrustIdentityHeaderFromNetwork && cfg.TLS.ClientCAFile == "" && cfg.TokensFile == "" && !transport.IsLoopback(cfg.Listen) {
		w = append(w, fmt.Sprintf("WARNING: Config.TrustIdentityHeaderFromNetwork: the curator charges whatever identity each caller names in its %s header, "+
			"and %s (Config.Listen) is not a loopback address: anyone who can reach it can spend any identity's budget. "+
			"Use client certificates (Config.TLS.ClientCAFile) or bearer tokens (Config.TokensFile) unless everything in front of the curator authenticates callers and sets the header",
			transport.IdentityHeader, cfg.Listen))
	}
	if m := cfg.Data.Scaling.Mode; m != "" && !m.Private() {
		w = append(w, fmt.Sprintf("WARNING: Config.Data.Scaling.Mode %s scales the features with the data's own statistics, so one record's change moves every scaled row: "+
			"the (ε, δ) guarantee of the projection and of every release DOES NOT HOLD. Use public bounds (Config.Data.Scaling.Schema) or the default private scaling "+
			"unless the data are public", m))
	}
	if cfg.Jobs.Enabled && !cfg.Jobs.TrainingConsented && (cfg.PatientBudget.Epsilon > 0 || cfg.PatientDatasetBudget.Epsilon > 0) {
		w = append(w, "WARNING: a whole-patient cap (Config.PatientBudget.Epsilon) with tuning jobs (Config.Jobs.Enabled): every Kusner job will be refused, "+
			"since it trains on the training part with no mechanism and so has no whole-patient bound; DP-HyPO jobs are accepted. "+
			"Config.Jobs.TrainingConsented declares the training part's patients consented, if they are")
	}
	if !answer.IsExact(cfg.Output.Mechanism) {
		if f, ok := answersForecast(cfg.Output); ok && f.Class == worth.NearRandom {
			w = append(w, "WARNING: "+f.String()+" (Config.Output.Epsilon; or a public range nearer the target's values, Config.Output.Lower and Config.Output.Upper)")
		}
		return w
	}
	limit := cfg.ExactAnswersMaxRows
	if limit == 0 {
		limit = DefaultExactAnswersMaxRows
	}
	w = append(w, fmt.Sprintf("WARNING: Config.Output.Mechanism none: query answers are EXACT and UNPROTECTED (no differential privacy, ε = ∞) and cost no budget; "+
		"identities holding a projection release can read the exact target of up to %d rows of the dataset, all of them together (Config.ExactAnswersMaxRows). "+
		"Use Config.Output.Mechanism laplace or gaussian unless the outputs are truly not sensitive", limit))
	if cfg.Evaluation.Mode == curator.EvaluateProgram {
		w = append(w, "WARNING: Config.Evaluation.Mode program with exact answers (Config.AllowExactProgramAnswers): every answer is an exact function of one record's features, "+
			"so the features of queried records are not protected by the projection's (ε, δ)")
	}
	return w
}

// answersForecast is what the answers o releases are worth (worth.Study) before their
// range is known: the noise sd of a range of width one, which is the ratio of sd to
// width whatever the range, since the noise is calibrated to the width.
func answersForecast(o curator.OutputPrivacy) (worth.Forecast, bool) {
	eps := o.Epsilon
	if eps == 0 {
		eps = curator.DefaultOutputEpsilon
	}
	m, err := answer.New(o.Mechanism, answer.Params{Epsilon: eps, Delta: o.Delta, Lower: 0, Upper: 1})
	if err != nil {
		return worth.Forecast{}, false
	}
	return worth.Ratio(m.NoiseSD(), eps), true
}
