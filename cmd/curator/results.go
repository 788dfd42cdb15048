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
	"text/tabwriter"
	"time"

	"github.com/privbo/privbo/internal/cli"
	"github.com/privbo/privbo/internal/flagconf"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
)

// resultsServeFlags are the settings of c that 'curator results' shares with serve, under
// their declared names (config.Config.Bind), with the help they have here: given on its
// command line they win over the curator's configuration file and environment, as they
// do for serve.
func resultsServeFlags(c *config.Config) []struct {
	field any // the address of c's field
	usage string
} {
	return []struct {
		field any
		usage string
	}{
		{&c.StateDir, "the curator's state directory, holding its ledger (required unless --ledger postgres)"},
		{&c.Ledger.Kind, "privacy ledger store: sqlite (in --state) or postgres"},
		{&c.Ledger.DSN, "PostgreSQL connection string, for --ledger postgres"},
		{&c.Ledger.Schema, "PostgreSQL schema of the ledger tables"},
		{&c.Ledger.CallTimeout, "bound on each call to the PostgreSQL ledger"},
		{&c.DatasetID, "dataset id, as the curator's --dataset-id (required)"},
		{&c.DataPath, "the curator's data file: with --evaluate column the true outcome of each row is its target there"},
		{&c.Data.Target, "the target column of --data"},
		{&c.Data.Features, "the curator's --features (the file is read as serve reads it)"},
		{&c.Data.Exclude, "the curator's --exclude"},
		{&c.Data.MissingMarkers, "the curator's --missing-markers"},
		{&c.Data.Scaling.Schema, "the curator's --schema (its categorical columns are needed to read the file)"},
		{&c.Data.Scaling.Mode, "the curator's --scaling"},
		{&c.Evaluation.Mode, "how the curator evaluates rows: column (the data's target), program or manual (the recorded evaluations)"},
	}
}

// results is 'curator results': for each modeler identity, the rows its studies had
// evaluated, in order, with their true outcome and their rank in the dataset. It is the
// hospital's view of what a study found, for the curator's operator only: it reads the
// ledger and the data file on this machine, prints data values to the operator's
// terminal (never to a log), releases nothing and costs no privacy budget. No RPC
// reaches it.
func results(args []string) error {
	fs := flag.NewFlagSet("curator results", flag.ContinueOnError)
	declared := config.NewConfig()
	set := declared.Bind()
	for _, f := range resultsServeFlags(&declared) {
		fs.String(set.Name(f.field), "", f.usage+" (default: from --config or the environment, as serve reads them)")
	}
	configFile := fs.String("config", "", "the curator's configuration file: the settings above not given here are read from it and from PRIVBO_CURATOR_* variables, as serve reads them")
	identity := fs.String("identity", "", "only this modeler identity (default: all)")
	dirName := fs.String("direction", "maximize", "which outcome ranks first: maximize (rank 1 = the highest) or minimize (rank 1 = the lowest); the curator does not know the modeler's direction")
	asJSON := fs.Bool("json", false, "print one JSON document instead of tables")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: curator results --state DIR --dataset-id ID [--identity X] [--direction maximize|minimize] [--json]\n\n"+
			"For each modeler identity, the rows its studies had evaluated, in order, with their true outcome and\n"+
			"their rank in the dataset. Local and operator-only: it prints data values, releases nothing and costs\n"+
			"no privacy budget. With --evaluate column (the default) the true outcome is the data file's target,\n"+
			"so it needs --data and --target, or the curator's --config.")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args, os.Stdout); err != nil {
		return err
	}
	maximize, err := parseRankDirection(*dirName)
	if err != nil {
		return err
	}
	sf, _, err := serveSettings(fs, *configFile)
	if err != nil {
		return err
	}
	datasetID := sf.cfg.DatasetID
	store, err := readLedger(fs, sf.lf, datasetID)
	if err != nil {
		return err
	}
	defer store.Close()
	truth, err := outcomes(sf)
	if err != nil {
		return err
	}
	ctx := context.Background()
	ids, err := curator.Results(ctx, store, datasetID)
	if err != nil {
		return err
	}
	if truth.values == nil { // program or manual: the recorded evaluations
		ev, err := curator.Evaluations(ctx, store, datasetID)
		if err != nil {
			return err
		}
		truth.values = ev
	}
	if *identity != "" {
		var only []curator.IdentityResults
		for _, r := range ids {
			if r.Identity == *identity {
				only = append(only, r)
			}
		}
		if len(only) == 0 {
			return fmt.Errorf("curator results: identity %q has no records on dataset id %q", *identity, datasetID)
		}
		ids = only
	}
	rep, err := buildResults(datasetID, truth, maximize, ids)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return writeResultsText(os.Stdout, rep)
}

// serveSettings reads the curator's settings as serve does — its configuration file and
// environment — with the flags given on fs's command line winning. full holds them, under
// fs's name; the flags it visits are those given in any of the three.
func serveSettings(fs *flag.FlagSet, configFile string) (sf *serveFlags, full *flag.FlagSet, err error) {
	full = flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	sf = &serveFlags{}
	sf.register(full)
	if err := full.Parse(nil); err != nil {
		return nil, nil, err
	}
	configFile = cmp.Or(configFile, os.Getenv(flagconf.EnvName(envPrefix, "config")))
	if err := flagconf.Apply(full, configFile, envPrefix); err != nil {
		return nil, nil, err
	}
	fs.Visit(func(f *flag.Flag) {
		if full.Lookup(f.Name) != nil && err == nil {
			err = full.Set(f.Name, f.Value.String())
		}
	})
	return sf, full, err
}

func parseRankDirection(s string) (maximize bool, err error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "max", "maximize", "maximise":
		return true, nil
	case "min", "minimize", "minimise":
		return false, nil
	}
	return false, fmt.Errorf("curator results: --direction %q: want maximize or minimize", s)
}

// truth is the true outcome of rows: the data file's target (--evaluate column), or the
// recorded evaluations (program, manual), which cover only the rows evaluated so far.
type truth struct {
	values map[int]float64
	n      int    // rows of the data file; 0 for recorded evaluations
	source string // what the outcome is, in words
	mode   string
}

// outcomes reads the data file's target when rows are evaluated from it (the file is
// read with the curator's own loader and options, so that row i is the curator's row
// i); for program and manual evaluation it leaves values nil, for the recorded evaluations.
func outcomes(sf *serveFlags) (truth, error) {
	mode := cmp.Or(sf.cfg.Evaluation.Mode, curator.EvaluateColumn)
	switch mode {
	case curator.EvaluateProgram, curator.EvaluateManual:
		return truth{mode: mode, source: fmt.Sprintf("the curator's recorded evaluations (--evaluate %s)", mode)}, nil
	case curator.EvaluateColumn:
	default:
		return truth{}, fmt.Errorf("curator results: --evaluate %q: want column, program or manual", mode)
	}
	if sf.cfg.DataPath == "" || sf.cfg.Data.Target == "" {
		return truth{}, errors.New("curator results: with --evaluate column the true outcome of a row is its target in the data file: give --data and --target (or the curator's --config)")
	}
	opt, err := sf.data()
	if err != nil {
		return truth{}, err
	}
	raw, err := dataset.LoadRaw(sf.cfg.DataPath, opt)
	if err != nil {
		return truth{}, fmt.Errorf("curator results: %w", err)
	}
	t := truth{values: make(map[int]float64, raw.N), n: raw.N, mode: mode,
		source: fmt.Sprintf("column %s of %s", raw.Target, sf.cfg.DataPath)}
	for i, y := range raw.Y {
		t.values[i] = y
	}
	return t, nil
}

// resultsReport is the JSON document of 'curator results' (and what its tables show).
type resultsReport struct {
	DatasetID string `json:"dataset_id"`
	// Outcome says what the true outcome is; Evaluate is the curator's --evaluate.
	Outcome  string `json:"outcome"`
	Evaluate string `json:"evaluate"`
	// Direction is "maximize" (rank 1 = the highest outcome) or "minimize".
	Direction string `json:"direction"`
	// RankedAmong is the number of rows ranks and percentiles are taken over: every row
	// of the data file, or (program, manual) the rows evaluated so far.
	RankedAmong int `json:"ranked_among"`
	// TopOnePercent is the outcome a row must reach to be in the top 1%: the 99th
	// percentile of the outcomes in the direction (linear interpolation, numpy's default).
	TopOnePercent float64           `json:"top_one_percent_threshold"`
	Identities    []identityResults `json:"identities"`
}

type identityResults struct {
	Identity    string                     `json:"identity"`
	Projections []curator.ProjectionRecord `json:"projections"`
	Rows        []resultRow                `json:"rows"`
	// Best is the row with the best true outcome among Rows (nil without rows);
	// TopOnePercentRows lists the rows among Rows in the dataset's top 1%.
	Best              *resultRow `json:"best,omitempty"`
	TopOnePercentRows []int      `json:"top_one_percent_rows"`
}

// resultRow is one evaluated row: Order is its place among the identity's answers (1 =
// first), Rank its place among RankedAmong rows (1 = the best, ties sharing the best
// rank), Percentile the share of those rows whose outcome is no better than its own (1
// for the best row), Answer the value released to the identity.
type resultRow struct {
	Order      int       `json:"order"`
	Index      int       `json:"index"`
	TrueValue  *float64  `json:"true_value"`
	Rank       int       `json:"rank,omitempty"`
	Percentile float64   `json:"percentile,omitempty"`
	TopOne     bool      `json:"top_one_percent"`
	Answer     float64   `json:"answer"`
	Time       time.Time `json:"time"`
	// Pass is the answering pass: 0 for the study's answers, p ≥ 1 for a confirmation
	// pass that answered the row again (not counted again in best or top 1%).
	Pass int `json:"pass,omitempty"`
}

func buildResults(datasetID string, t truth, maximize bool, ids []curator.IdentityResults) (*resultsReport, error) {
	rk := curator.NewRanking(t.values, maximize)
	rep := &resultsReport{DatasetID: datasetID, Outcome: t.source, Evaluate: t.mode, Direction: "maximize", RankedAmong: rk.N(),
		TopOnePercent: rk.TopOnePercent, Identities: []identityResults{}}
	if !maximize {
		rep.Direction = "minimize"
	}
	for _, id := range ids {
		ir := identityResults{Identity: id.Identity, Projections: id.Projections, Rows: []resultRow{}, TopOnePercentRows: []int{}}
		if ir.Projections == nil {
			ir.Projections = []curator.ProjectionRecord{}
		}
		for k, a := range id.Rows {
			if t.n > 0 && a.Index >= t.n {
				return nil, fmt.Errorf("curator results: identity %s was answered row %d, beyond the %d rows of %s: is it the curator's data file?", id.Identity, a.Index, t.n, t.source)
			}
			r := resultRow{Order: k + 1, Index: a.Index, Answer: a.Answer, Time: a.Time.UTC(), Pass: a.Pass}
			if v, ok := t.values[a.Index]; ok {
				r.TrueValue = &v
				r.Rank, r.Percentile, r.TopOne = rk.Rank(v)
				if r.Pass > 0 { // a row answered again: counted with its first answer
					ir.Rows = append(ir.Rows, r)
					continue
				}
				if r.TopOne {
					ir.TopOnePercentRows = append(ir.TopOnePercentRows, a.Index)
				}
				if ir.Best == nil || r.Rank < ir.Best.Rank {
					best := r
					ir.Best = &best
				}
			}
			ir.Rows = append(ir.Rows, r)
		}
		rep.Identities = append(rep.Identities, ir)
	}
	return rep, nil
}

func writeResultsText(out io.Writer, rep *resultsReport) error {
	first := map[string]string{"maximize": "highest", "minimize": "lowest"}[rep.Direction]
	among := fmt.Sprintf("the %d rows of the data file", rep.RankedAmong)
	if rep.Evaluate != curator.EvaluateColumn {
		among = fmt.Sprintf("the %d rows evaluated so far (the curator knows no other row's outcome)", rep.RankedAmong)
	}
	fmt.Fprintf(out, "dataset %s: true outcome = %s; rank 1 = the %s outcome (--direction %s) among %s; percentile = the share of those rows whose outcome is no better; top 1%%: %s %.6g\n",
		rep.DatasetID, rep.Outcome, first, rep.Direction, among, map[bool]string{true: "≥", false: "≤"}[rep.Direction == "maximize"], rep.TopOnePercent)
	fmt.Fprintln(out, "These are data values, for the curator's operator only: read on this machine, released to no one, at no privacy cost.")
	if len(rep.Identities) == 0 {
		fmt.Fprintln(out, "\nNo modeler identity has records on this dataset id.")
	}
	for _, id := range rep.Identities {
		var rels []string
		for _, p := range id.Projections {
			rels = append(rels, p.ReleaseID)
		}
		relText := "no projection"
		if len(rels) > 0 {
			relText = "projection releases " + strings.Join(rels, ", ")
		}
		first, again := 0, 0
		for _, r := range id.Rows {
			if r.Pass == 0 {
				first++
			} else {
				again++
			}
		}
		confirmText := ""
		if again > 0 {
			confirmText = fmt.Sprintf(", and %d answers again in confirmation passes", again)
		}
		fmt.Fprintf(out, "\nidentity %s: %d rows answered (%s; the ledger keeps answers per identity, not per study)%s\n", id.Identity, first, relText, confirmText)
		if b := id.Best; b != nil {
			fmt.Fprintf(out, "best true outcome among them: row %d = %.6g, rank %d of %d (percentile %.1f%%); rows in the top 1%%: %d%s\n",
				b.Index, *b.TrueValue, b.Rank, rep.RankedAmong, 100*b.Percentile, len(id.TopOnePercentRows), rowList(id.TopOnePercentRows))
		}
		if len(id.Rows) == 0 {
			continue
		}
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "ORDER\tROW\tTRUE OUTCOME\tRANK\tPERCENTILE\tTOP 1%\tANSWER RELEASED\tANSWERED AT (UTC)\t")
		for _, r := range id.Rows {
			tv, rank, pct, top := "-", "-", "-", "-"
			if r.TrueValue != nil {
				tv, rank, pct, top = fmt.Sprintf("%.6g", *r.TrueValue), fmt.Sprint(r.Rank), fmt.Sprintf("%.1f%%", 100*r.Percentile), "no"
				if r.TopOne {
					top = "yes"
				}
			}
			answer := fmt.Sprintf("%.6g", r.Answer)
			if r.Pass > 0 {
				answer += fmt.Sprintf(" (pass %d)", r.Pass)
			}
			fmt.Fprintf(w, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Order, r.Index, tv, rank, pct, top, answer, r.Time.Format("2006-01-02 15:04:05"))
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// rowList is " (rows 17, 99)" or " (row 17)" for a non-empty list, "" otherwise.
func rowList(rows []int) string {
	switch len(rows) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(" (row %d)", rows[0])
	}
	s := make([]string, len(rows))
	for k, r := range rows {
		s[k] = fmt.Sprint(r)
	}
	return " (rows " + strings.Join(s, ", ") + ")"
}
