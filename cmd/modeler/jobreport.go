package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/privbo/privbo/internal/cli"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/jobs/jobreport"
)

// jobReportCommand writes one of the caller's jobs as an HTML page: what the curator
// released and charged, the job's public events and, for a Kusner job, its forecast
// (asked again with QuoteJob, free). It shows nothing the curator did not send: a
// DP-HyPO job's runs and sampling distributions stay on the curator (jobreport.Report).
func jobReportCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("modeler job report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn connFlags
	var out string
	conn.register(fs)
	fs.StringVar(&out, "out", "", "directory to write the report (index.html) into (required)")
	// The job id may come before or after the flags.
	var ids []string
	for {
		if err := cli.ParseWithArgs(fs, args, stdout); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		ids, args = append(ids, fs.Arg(0)), fs.Args()[1:]
	}
	if len(ids) != 1 || out == "" {
		return errors.New("job report: give one job id and --out DIR")
	}
	pc, closeConn, err := conn.client(stderr)
	if err != nil {
		return err
	}
	defer closeConn()
	client := curatorclient.New(pc)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	id := ids[0]
	j, err := client.Job(ctx, id)
	if err != nil {
		return fmt.Errorf("job report: %w", err)
	}
	if !j.State.Terminal() {
		fmt.Fprintf(stderr, "job %s is %s; the report waits for it to end (Ctrl-C to stop)\n", id, j.State)
	}
	// WaitJob replays every event and ends with the job.
	var events []jobs.Event
	if j, err = client.WaitJob(ctx, id, func(e jobs.Event) { events = append(events, e) }); err != nil {
		return fmt.Errorf("job report: %w", err)
	}
	r := jobreport.Report{Job: j, Events: events, Relation: "(not stated by this curator)", Generated: time.Now().UTC()}
	if q, err := client.QuoteJob(ctx, j.Spec); err == nil {
		r.Relation, r.Forecast = string(q.Relation), q.Forecast
	} else {
		fmt.Fprintf(stderr, "the curator did not quote the job again (%v); the report has no forecast or relation\n", err)
	}
	path, err := jobreport.Write(r, out)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, path)
	return nil
}
