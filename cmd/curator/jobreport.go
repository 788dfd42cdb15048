package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/privbo/privbo/internal/cli"
	"github.com/privbo/privbo/pkg/jobs"
)

// jobReport writes a job's operator report: the modeler's report plus the job's path
// (for DP-HyPO every run, its point and noisy score, and how the sampling distribution
// moved), which never leaves the curator. It reads --state's jobs.db and may run while
// the curator serves.
func jobReport(args []string) error {
	fs := flag.NewFlagSet("curator job-report", flag.ContinueOnError)
	var state, id, out string
	fs.StringVar(&state, "state", "", "the curator's state directory (holds jobs.db)")
	fs.StringVar(&id, "job", "", "the job id")
	fs.StringVar(&out, "out", "", "directory to write the report (index.html) into")
	if err := cli.ParseWithArgs(fs, args, os.Stdout); err != nil {
		return err
	}
	if state == "" || id == "" || out == "" {
		return errors.New("job-report: --state, --job and --out are required")
	}
	rd, err := jobs.OpenReader(state)
	if err != nil {
		return err
	}
	defer rd.Close()
	ctx := context.Background()
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
	r := jobs.Report{Job: j, Events: evs, Trace: tr, Generated: time.Now().UTC(),
		Relation: string(j.Spec.Relation()) + " (the kind's default; `curator ledger` lists the relation of charge job/" + id + ")"}
	path, err := jobs.WriteReport(r, out)
	if err != nil {
		return err
	}
	fmt.Println(path)
	return nil
}
