// Command modeler is privbo's modeler client: it runs PO-GP-UCB against a curator,
// choosing which rows are worth an evaluation while seeing only private releases.
//
//	modeler run --curator ADDR [--r R|auto] [--epsilon E --delta D] [--iterations T] [--batch Q] [--fit-every K] [--study NAME] [--json]
//	modeler studies
//	modeler report --study NAME --out DIR
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/privbo/privbo/internal/cli"
	"github.com/privbo/privbo/internal/figure"
	"github.com/privbo/privbo/internal/setting"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/noise"
	"github.com/privbo/privbo/pkg/study"
	"github.com/privbo/privbo/pkg/transport"
)

// commands are modeler's commands, in the order its usage lists them.
var commands = []cli.Command{
	{Name: "run", Help: "run a PO-GP-UCB study against a curator (--study NAME keeps it and resumes it)", Run: runStudy},
	{Name: "studies", Help: "list the stored studies", Run: studiesCommand},
	{Name: "report", Help: "write an HTML report (and PNGs) of a stored study", Run: reportCommand},
	{Name: "job", Help: "private hyperparameter-tuning jobs on the curator's data (kusner, dphypo, get, list, cancel, watch)", Run: jobCommand},
	{Name: "simulate", Help: "compare PO-GP-UCB, GP-UCB and random search in-process (regret CSV and plot)", Run: runSimulate},
}

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	if cli.ExitCode(err) != 0 {
		fmt.Fprintln(os.Stderr, errorLine(err))
	}
	os.Exit(cli.ExitCode(err))
}

// printProtection states the guarantee and mechanism of the projection and of the
// answers the study received, as the curator stated them: each in its first sentence
// (at most 300 characters), or in full with --explain.
func printProtection(w io.Writer, p modeler.Protection, explain bool) {
	mech := cmp.Or(p.ProjectionMechanism, "not stated")
	say := func(g string) string { return g }
	if !explain {
		say = firstSentence
	}
	fmt.Fprintf(w, "projection (mechanism %s): %s\n", mech, say(p.ProjectionGuarantee))
	fmt.Fprintf(w, "answers (mechanism %s): %s\n", p.AnswersMechanism, say(p.AnswersGuarantee))
	if p.ExactAnswers {
		fmt.Fprintln(w, "note: the answers this study received are exact and unprotected (ε = ∞); the projection's guarantee does not cover them.")
	}
	if !explain {
		fmt.Fprintln(w, "--explain prints the curator's full guarantees; docs/PRIVACY.md explains them.")
	}
}

// firstSentence is the first sentence of a guarantee text, what it means in at most 240
// characters: up to its first full stop, or its last clause (cut at "; " or ": ")
// within 240 characters, ending in a full stop.
func firstSentence(g string) string {
	const limit = 240
	for i := 0; ; i++ {
		j := strings.Index(g[i:], ". ")
		if j < 0 {
			break
		}
		// "et al. 2013" ends no sentence; a capital after the stop begins one.
		if i += j; !strings.HasSuffix(g[:i], " al") && i+2 < len(g) && unicode.IsUpper(rune(g[i+2])) {
			g = g[:i]
			break
		}
	}
	g = strings.TrimSuffix(g, ".")
	if r := []rune(g); len(r) > limit {
		cut := string(r[:limit])
		g = cut[:max(strings.LastIndex(cut, "; "), strings.LastIndex(cut, ": "), 0)]
	}
	return g + "."
}

// errorLine is err as printed: prefixed "modeler: " once, library errors carrying it
// already.
func errorLine(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "modeler: ") {
		return msg
	}
	return "modeler: " + msg
}

// textError shows err to a person in other words (flags instead of the library's
// setting names, a hint); it unwraps to err.
type textError struct {
	text string
	err  error
}

func (e *textError) Error() string { return e.text }
func (e *textError) Unwrap() error { return e.err }

// run runs a command. A curator that cannot be reached is reported with the flags that
// say where it is and how to talk to it; a refusal with what to do (explainRefusal,
// exit status 3).
func run(args []string, stdout, stderr io.Writer) error {
	err := cli.Dispatch("modeler", commands, args, stdout, stderr)
	var de *transport.DialError
	if errors.As(err, &de) {
		return &textError{text: err.Error() + "\n  " + dialFixes[de.Failure], err: err}
	}
	if errors.Is(err, modeler.ErrUnreachable) {
		return &textError{text: err.Error() + " (--curator, --ca, --cert, --key, --server-name)", err: err}
	}
	return explainRefusal(err)
}

// dialFixes is the step that helps against each failure to reach the curator.
var dialFixes = map[transport.DialFailure]string{
	transport.NothingListens:       "Check --curator: is the curator running, and listening at that host and port?",
	transport.ServerWantsTLS:       "Give --ca with the CA that signed the curator's certificate (and --cert, --key if it asks for a client certificate).",
	transport.ServerWantsPlaintext: "Drop --ca, --cert and --key, or ask the curator's operator for its TLS address.",
	transport.ServerNotTrusted:     "Give --ca with the CA that signed the curator's certificate, or --server-name with the name it is issued for.",
	transport.ClientCertMissing:    "Give --cert and --key with the client certificate the curator's operator issued to you.",
	transport.ClientCertRefused:    "Give --cert and --key issued by a CA the curator trusts (its operator's; for a development CA, curator dev-ca --add-client).",
}

// runFlags are the options of `modeler run`: the study's settings (cfg, declared and
// given their defaults by modeler.Config.Bind and modeler.NewConfig) and what only the
// command line has.
type runFlags struct {
	cfg                   modeler.Config
	settings              *setting.Set
	conn                  connFlags
	studyName, studiesDir string
	known                 knownBestFlag
	asJSON, quiet, dryRun bool
	newStudy              bool
	explain               bool
	timeout               time.Duration
}

// register defines the flags of `modeler run` on fs. Every stored setting is stored
// under its flag's name (study.Settings' JSON names; TestStoredNamesAreFlags), so a
// stored study fills the flags by name (fillFromStudy).
func (o *runFlags) register(fs *flag.FlagSet) {
	o.cfg = modeler.NewConfig()
	o.settings = o.cfg.Bind().With(setting.Duration(&o.timeout, "timeout", setting.NonNegativeDuration, "give up after this long (0: no limit)"))
	o.settings.Register(fs)
	o.conn.register(fs)
	fs.StringVar(&o.studyName, "study", "", "keep the study under this name and resume it if it exists (flags not given are taken from it)")
	fs.StringVar(&o.studiesDir, "studies-dir", "", "studies directory (default: $XDG_STATE_HOME/privbo or ~/.local/state/privbo)")
	fs.BoolVar(&o.newStudy, "new-study", false, "with --study: create it, though its name is within 2 edits of a stored study's (refused if it exists)")
	fs.Var(&o.known, "known-best", "with --study: record the known optimum max f (simulations) for the report's regret curve")
	fs.BoolVar(&o.asJSON, "json", false, "print the result as one JSON object on the last line of stdout")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress lines")
	fs.BoolVar(&o.explain, "explain", false, "print the curator's full guarantee texts (default: what each means, in one sentence)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the curator's quote of the study (its cost, noise and what its recommendation is likely worth), pay nothing and run nothing")
}

func runStudy(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("modeler run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o runFlags
	o.register(fs)
	if err := cli.Parse(fs, args, stdout); err != nil {
		return err
	}
	// Checked on what the command line gives, before a stored study fills in the rest.
	if err := o.settings.CheckFlags(fs); err != nil {
		return err
	}
	var store *study.Store
	studyName, known := o.studyName, o.known
	if studyName != "" {
		var err error
		if store, err = openStudies(o.studiesDir); err != nil {
			return err
		}
		defer store.Close()
		found, err := fillFromStudy(context.Background(), fs, store, studyName)
		if err != nil {
			return err
		}
		if err := checkNewStudy(context.Background(), store, studyName, found, o.newStudy); err != nil {
			return err
		}
		switch {
		case !found && o.dryRun:
			fmt.Fprintf(stderr, "modeler: no study is named %q yet in %s; a dry run creates none.\n", studyName, store.Dir())
		case !found:
			fmt.Fprintf(stderr, "modeler: new study %q, kept in %s.\n", studyName, store.Dir())
		}
	} else if known.set || o.newStudy {
		return errors.New("--known-best and --new-study need --study")
	}
	cfg, conn, asJSON := o.cfg, o.conn, o.asJSON // as given, or filled from the stored study
	narrate(&cfg, o.quiet, stderr)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	defer cancelOnSignal(cancel)()
	// An interruption ends the run with what is known so far (see interrupted).
	stopped := func(res *modeler.Result, err error) error {
		return interrupted(ctx, err, res, store, studyName, cfg, asJSON, stdout)
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	client, closeConn, err := conn.client(stderr)
	if err != nil {
		return err
	}
	defer closeConn()
	if o.dryRun {
		return dryRun(ctx, curatorclient.New(client), cfg, asJSON, stdout, stderr)
	}
	start := time.Now()
	var res *modeler.Result
	if store != nil {
		sconn, cerr := conn.studyConnection()
		if cerr != nil {
			return cerr
		}
		res, err = modeler.RunStudy(ctx, curatorclient.New(client), store, studyName, sconn, cfg)
		if known.set {
			if kerr := store.SetKnownBest(context.WithoutCancel(ctx), studyName, known.v); kerr != nil && err == nil {
				err = kerr
			}
		}
	} else {
		res, err = modeler.Run(ctx, curatorclient.New(client), cfg)
	}
	if errors.Is(err, modeler.ErrWideProjection) {
		return fmt.Errorf("%w (--allow-r-above-d releases it anyway, to reproduce the paper's lifted runs)", err)
	}
	if err != nil {
		return stopped(res, err)
	}
	return reportRun(stdout, res, cfg, time.Since(start), asJSON, o.explain)
}

// narrate sets the hooks through which a run tells the person at the
// terminal what it is doing, on stderr so that stdout holds only the result.
// The quote, a resumption and a long wait are always told; --quiet silences
// only the line per iteration.
func narrate(cfg *modeler.Config, quiet bool, stderr io.Writer) {
	iterations := cfg.Iterations
	if !quiet {
		extreme := cfg.Direction.Extreme()
		cfg.Progress = func(s modeler.Step) {
			fmt.Fprintf(stderr, "iteration %3d/%d  row %6d  answer %10.4g  %s answer %10.4g (row %d)  ε left %.4g\n",
				s.Iteration, iterations, s.Index, s.Value, extreme, s.BestValue, s.BestIndex, s.EpsilonRemaining)
		}
	}
	cfg.Waiting = func(rows []int, waited time.Duration) {
		fmt.Fprintf(stderr, "waiting %s for the curator to evaluate rows %v (slow evaluation, or the curator is restarting)\n", waited.Round(time.Second), rows)
	}
	cfg.Quoted = func(q *modeler.Quote) { printQuote(stderr, q) }
	cfg.Resumed = func(r modeler.Resume) {
		again := ""
		if r.Projection {
			again = " (projection asked again: the curator replays it at no cost)"
		}
		moved := ""
		if r.PreviousIterations != 0 {
			moved = fmt.Sprintf(" (T changed from %d)", r.PreviousIterations)
		}
		fmt.Fprintf(stderr, "resuming study %s: %d of %d iterations recorded%s, GP rebuilt in %s%s\n",
			r.Study, r.Iterations, iterations, moved, r.Rebuild.Round(time.Microsecond), again)
	}
}

// reportRun prints what a finished run found and what it cost, then, with
// --json, the whole result as the last line of stdout.
func reportRun(stdout io.Writer, res *modeler.Result, cfg modeler.Config, took time.Duration, asJSON, explain bool) error {
	printResult(stdout, res, cfg.Direction, took)
	fitted := "fixed"
	if cfg.FitEvery > 0 {
		fitted = fmt.Sprintf("maximum likelihood every %d observations, %d fits", cfg.FitEvery, res.Refits)
	}
	fmt.Fprintf(stdout, "hyperparameters (%s): lengthscale %.4g, signal variance %.4g, noise variance %.4g\n",
		fitted, res.Lengthscale, res.SignalVariance, res.NoiseVariance)
	if auto := res.RAuto; auto != nil {
		fmt.Fprintf(stdout, "r = %d chosen by --r auto: %s\n", auto.R, auto.Rule)
	}
	if res.ProjectionNoiseSD > 0 {
		how := map[string]string{"model": "modelled (expected kernel, de-biased default lengthscale)", "kernel": "modelled in the kernel only", "ignore": "ignored (rows treated as exact)"}[res.ProjectionNoise]
		fmt.Fprintf(stdout, "projection noise: sd %.4g per entry, %s\n", res.ProjectionNoiseSD, how)
	}
	if res.NoisePrior != "" {
		fmt.Fprintf(stdout, "GP prior for private answers: rule %s, answer noise variance %.4g (the curator's mechanism)\n",
			res.NoisePrior, res.AnswerNoiseVariance)
	}
	fmt.Fprintf(stdout, "privacy spent by this identity: ε=%s, δ=%s; remaining ε=%s, δ=%s (its feature-unit budget, which holds the projection and the answers)\n",
		figure.Up(res.EpsilonSpent), figure.Up(res.DeltaSpent), figure.Text(res.EpsilonRemaining), figure.Text(res.DeltaRemaining))
	printProtection(stdout, res.Protection, explain)
	if !asJSON {
		return nil
	}
	return json.NewEncoder(stdout).Encode(res)
}

// printResult prints a finished study's result, the recommended row first: its posterior
// mean ± sd, what the answers' noise allows, then the best single answer, labelled as
// the answer it is.
func printResult(w io.Writer, res *modeler.Result, dir study.Direction, took time.Duration) {
	extreme := dir.Extreme()
	fmt.Fprintf(w, "dataset %s: recommended row %d: posterior mean %.4g ± %.3g (1 sd), the %s posterior mean among the %d queried rows (%s; %d queries, %s, release %s, r=%d)\n",
		res.Dataset, res.Recommended, res.RecommendedMean, res.RecommendedSD, extreme, distinct(res.Queried), res.Direction, res.Iterations,
		took.Round(time.Millisecond), res.ReleaseID, res.R)
	var op study.OutputPrivacy
	if res.Protection.ExactAnswers {
		op.Noise = noise.None
	} else {
		op.Mechanism = res.Protection.AnswersMechanism
		if r := res.AnswersRange; r != nil {
			op.Lower, op.Upper = r[0], r[1]
		}
	}
	fmt.Fprintf(w, "answer noise: %s\n", study.AnswerNoiseText(op, res.AnswerNoiseSD))
	if res.Protection.ExactAnswers {
		fmt.Fprintf(w, "%s answer: %.6g at row %d (exact)\n", extreme, res.BestValue, res.BestIndex)
	} else {
		fmt.Fprintf(w, "%s noisy answer: %.6g at row %d (a noisy answer, not the row's value)\n", extreme, res.BestValue, res.BestIndex)
	}
	if g := res.GaussianRecommended; g != nil {
		fmt.Fprintf(w, "recommended under the answers' Laplace likelihood; under a Gaussian of the same variance (--recommend-likelihood gaussian) row %d\n", *g)
	}
	if len(res.Confirmed) > 0 {
		fmt.Fprintf(w, "confirmation passes (--confirm-rows): %d answers, each pass charged ε_out again\n", len(res.Confirmed))
	}
	if c := res.AnswersClip; c != nil {
		fmt.Fprintf(w, "answers clipped to [%g, %g] (--answer-clip): noise sd %.3g per answer, %.2g of that range's width, at the same ε and charge\n",
			c[0], c[1], res.AnswerClipNoiseSD, res.AnswerClipNoiseSD/(c[1]-c[0]))
	}
}

// distinct is the number of distinct rows in q.
func distinct(q []int) int {
	seen := make(map[int]bool, len(q))
	for _, i := range q {
		seen[i] = true
	}
	return len(seen)
}
