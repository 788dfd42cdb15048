package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/privbo/privbo/internal/cli"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/study"
	"github.com/privbo/privbo/pkg/study/calibrate"
)

// openStudies opens the studies directory dir, or study.DefaultDir when dir is empty.
// A study stored before the curator stated its answers' noise has it stated by
// calibrate.Noise, the one calibration on the modeler's side.
func openStudies(dir string) (*study.Store, error) {
	if dir == "" {
		var err error
		if dir, err = study.DefaultDir(); err != nil {
			return nil, err
		}
	}
	return study.Open(dir, study.WithNoiseStatement(calibrate.Noise))
}

// storedValues is a stored study's settings and connection by stored name.
func storedValues(st *study.Study) (map[string]string, error) {
	vals := st.Settings.Named()
	var conn map[string]string
	b, err := json.Marshal(st.Connection)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &conn); err != nil {
		return nil, err
	}
	for k, v := range conn {
		vals[k] = v
	}
	return vals, nil
}

// fillFromStudy sets every flag that the command line did not set from the stored study
// name (its settings and connection: each is stored under its flag's name), so that
// `modeler run --study NAME` alone resumes it. Flags that were set are left for modeler.RunStudy to compare
// with the stored ones. A study that does not exist yet is left alone (found false).
func fillFromStudy(ctx context.Context, fs *flag.FlagSet, store *study.Store, name string) (found bool, err error) {
	st, err := store.Get(ctx, name)
	if errors.Is(err, study.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	vals, err := storedValues(st)
	if err != nil {
		return true, err
	}
	for k, v := range vals {
		if fs.Lookup(k) == nil {
			return true, fmt.Errorf("study %s: stored setting %s has no flag of modeler run (a study from a newer modeler?)", name, k)
		}
		if set[k] {
			continue
		}
		if err := fs.Set(k, v); err != nil {
			return true, fmt.Errorf("study %s: stored --%s = %q: %w", name, k, v, err)
		}
	}
	return true, nil
}

// checkNewStudy guards against a mistyped --study name, which would create a study and
// pay for it instead of resuming the one meant: a new name within edit distance 2 of a
// stored study's (ignoring case) is refused unless --new-study confirms it, and
// --new-study is refused for a name that exists. Distinct names need no flag, so
// starting a study stays one command.
func checkNewStudy(ctx context.Context, store *study.Store, name string, found, confirmed bool) error {
	if found && confirmed {
		return fmt.Errorf("--new-study: study %q exists already in %s; drop --new-study to resume it, or choose another name", name, store.Dir())
	}
	if found || confirmed {
		return nil
	}
	list, err := store.List(ctx)
	if err != nil {
		return err
	}
	for _, s := range list {
		if editDistance(strings.ToLower(s.Name), strings.ToLower(name)) <= 2 {
			return fmt.Errorf("no study is named %q, but %q is (in %s): give --study %s to resume it, or add --new-study to create %q",
				name, s.Name, store.Dir(), s.Name, name)
		}
	}
	return nil
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	row := make([]int, len(y)+1)
	for j := range row {
		row[j] = j
	}
	for i := range x {
		prev := row[0]
		row[0] = i + 1
		for j := range y {
			cost := 1
			if x[i] == y[j] {
				cost = 0
			}
			prev, row[j+1] = row[j+1], min(row[j+1]+1, row[j]+1, prev+cost)
		}
	}
	return row[len(y)]
}

// studyConnection is c as a study stores it, with absolute file paths so that the study
// can be resumed from any directory.
func (c *connFlags) studyConnection() (study.Connection, error) {
	sc := study.Connection{Curator: c.addr, Identity: c.identity, ServerName: c.serverName}
	for _, f := range []struct {
		dst *string
		src string
	}{
		{&sc.CA, c.ca}, {&sc.Cert, c.cert}, {&sc.Key, c.key}, {&sc.TokenFile, c.tokenFile},
	} {
		if f.src == "" {
			continue
		}
		abs, err := filepath.Abs(f.src)
		if err != nil {
			return study.Connection{}, err
		}
		*f.dst = abs
	}
	return sc, nil
}

// knownBestFlag is an optional float flag.
type knownBestFlag struct {
	v   float64
	set bool
}

func (k *knownBestFlag) String() string {
	if !k.set {
		return ""
	}
	return strconv.FormatFloat(k.v, 'g', -1, 64)
}

func (k *knownBestFlag) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return err
	}
	k.v, k.set = v, true
	return nil
}

// studiesCommand is `modeler studies`: one line per stored study.
func studiesCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("modeler studies", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("studies-dir", "", "studies directory (default: $XDG_STATE_HOME/privbo or ~/.local/state/privbo)")
	asJSON := fs.Bool("json", false, "print the list as one JSON array")
	if err := cli.Parse(fs, args, stdout); err != nil {
		return err
	}
	store, err := openStudies(*dir)
	if err != nil {
		return err
	}
	defer store.Close()
	list, err := store.List(context.Background())
	if err != nil {
		return err
	}
	// The recommended row leads: the answers are noisy, so the best single answer is
	// mostly the luckiest noise draw (see the report).
	type listed struct {
		study.Summary
		Recommended *study.Recommendation `json:"recommended"`
	}
	rows := make([]listed, len(list))
	for i, s := range list {
		rows[i].Summary = s
		if s.Done == 0 {
			continue
		}
		if rows[i].Recommended, err = recommendation(store, s.Name); err != nil {
			return err
		}
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(rows)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tRECOMMENDED ROW\tPOSTERIOR MEAN ± SD\tDATASET\tITERATIONS\tSTATE\tUPDATED\tBEST SINGLE ANSWER (ROW)")
	for _, r := range rows {
		s := r.Summary
		rec, mean, best := "-", "-", "-"
		if p := r.Recommended; p != nil {
			rec, mean = strconv.Itoa(p.Index), fmt.Sprintf("%.4g ± %.3g", p.Mean, p.SD)
		}
		if s.BestValue != nil {
			best = fmt.Sprintf("%.4g (%d)", *s.BestValue, s.BestIndex)
		}
		ds := cmp.Or(s.Dataset, "-")
		state := s.State
		if s.Error != "" && s.State != "done" {
			state += " (" + truncate(s.Error, 60) + ")"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", s.Name, rec, mean, ds, s.Done, s.Total, state, s.Updated.Format("2006-01-02 15:04:05"), best)
	}
	return w.Flush()
}

// recommendation is the stored study name's recommended row, the GP's, rebuilt from the
// stored projection and answers (modeler.Replay); nil before its projection or its
// first answer.
func recommendation(store *study.Store, name string) (*study.Recommendation, error) {
	st, err := store.Get(context.Background(), name)
	if err != nil {
		return nil, err
	}
	obs, err := store.Observations(context.Background(), name)
	if err != nil || st.Release == nil || len(obs) == 0 {
		return nil, err
	}
	res, err := modeler.Replay(store, st, obs)
	if err != nil {
		return nil, err
	}
	return res.Recommendation(), nil
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// reportCommand is `modeler report`: an HTML page and PNGs of one study.
func reportCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("modeler report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("studies-dir", "", "studies directory (default: $XDG_STATE_HOME/privbo or ~/.local/state/privbo)")
	name := fs.String("study", "", "study to report on (required)")
	out := fs.String("out", "", "output directory for index.html and the PNGs (default: report-STUDY)")
	var known knownBestFlag
	fs.Var(&known, "known-best", "record the known optimum max f (simulations) for the regret curve")
	if err := cli.Parse(fs, args, stdout); err != nil {
		return err
	}
	if *name == "" {
		return errors.New("--study is required")
	}
	if *out == "" {
		*out = "report-" + *name
	}
	store, err := openStudies(*dir)
	if err != nil {
		return err
	}
	defer store.Close()
	ctx := context.Background()
	if known.set {
		if err := store.SetKnownBest(ctx, *name, known.v); err != nil {
			return err
		}
	}
	st, err := store.Get(ctx, *name)
	if err != nil {
		return err
	}
	obs, err := store.Observations(ctx, *name)
	if err != nil {
		return err
	}
	rec, err := recommendation(store, *name)
	if err != nil {
		return err
	}
	path, err := study.WriteReport(st, obs, rec, *out)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, path)
	return nil
}
