package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/privbo/privbo/internal/cli"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/jobs/jobreport"
	"github.com/privbo/privbo/pkg/storage"
)

// jobReport writes a job's operator report: the modeler's report plus the job's path
// (for DP-HyPO every run, its point and noisy score, and how the sampling distribution
// moved), which never leaves the curator. It reads --state's jobs.db, or with --ledger
// postgres the jobs in the ledger's schema, and may run while the curator serves.
func jobReport(args []string) error {
	fs := flag.NewFlagSet("curator job-report", flag.ContinueOnError)
	var state, id, out, kind, dsn, schema, dataset string
	fs.StringVar(&state, "state", "", "the curator's state directory (holds jobs.db), with --ledger sqlite")
	fs.StringVar(&kind, "ledger", "sqlite", "the curator's ledger: sqlite (jobs in --state) or postgres (jobs in the ledger's schema)")
	fs.StringVar(&dsn, "ledger-dsn", "", "PostgreSQL connection string, for --ledger postgres (default: $PRIVBO_CURATOR_LEDGER_DSN)")
	fs.StringVar(&schema, "ledger-schema", "privbo", "PostgreSQL schema of the ledger tables")
	fs.StringVar(&dataset, "dataset-id", "", "the curator's --dataset-id, for --ledger postgres")
	fs.StringVar(&id, "job", "", "the job id")
	fs.StringVar(&out, "out", "", "directory to write the report (index.html) into")
	if err := cli.ParseWithArgs(fs, args, os.Stdout); err != nil {
		return err
	}
	ctx := context.Background()
	var rd *jobs.Reader
	switch {
	case id == "" || out == "":
		return errors.New("job-report: --job and --out are required")
	case kind == "postgres":
		dsn = cmp.Or(dsn, os.Getenv("PRIVBO_CURATOR_LEDGER_DSN"))
		if dsn == "" || dataset == "" {
			return errors.New("job-report: --ledger postgres needs --ledger-dsn (or PRIVBO_CURATOR_LEDGER_DSN) and --dataset-id")
		}
		st, err := storage.OpenJobs(ctx, config.LedgerConfig{Kind: kind, DSN: dsn, Schema: schema}, "", dataset)
		if err != nil {
			return err
		}
		rd = jobs.NewReader(st)
	case state == "":
		return errors.New("job-report: --state is required (or --ledger postgres)")
	default:
		var err error
		if rd, err = jobs.OpenReader(state); err != nil {
			return err
		}
	}
	defer rd.Close()
	j, err := rd.Job(ctx, id)
	if err != nil {
		return fmt.Errorf("job-report: job %s: %w", id, err)
	}
	evs, err := rd.Events(ctx, id)
	if err != nil {
		return err
	}
	tr, err := rd.Trace(ctx, id)
	if errors.Is(err, jobs.ErrNotFound) {
		tr = &jobs.Trace{} // no path recorded (a Kusner job, or one that did not finish)
	} else if err != nil {
		return err
	}
	r := jobreport.Report{Job: j, Events: evs, Trace: tr, Generated: time.Now().UTC(),
		Relation: string(j.Spec.Relation()) + " (the kind's default; `curator ledger` lists the relation of charge job/" + id + ")"}
	path, err := jobreport.Write(r, out)
	if err != nil {
		return err
	}
	fmt.Println(path)
	return nil
}
