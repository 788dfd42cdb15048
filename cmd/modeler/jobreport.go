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
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
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
	client, closeConn, err := conn.client()
	if err != nil {
		return err
	}
	defer closeConn()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	id := ids[0]
	pj, err := client.GetJob(ctx, &curatorv1.GetJobRequest{Id: id})
	if err != nil {
		return fmt.Errorf("job report: %w", err)
	}
	if !terminal(pj.GetState()) {
		fmt.Fprintf(stderr, "job %s is %s; the report waits for it to end (Ctrl-C to stop)\n", id, stateName(pj.GetState()))
	}
	// WatchJob replays every event and ends with the job.
	stream, err := client.WatchJob(ctx, &curatorv1.WatchJobRequest{Id: id})
	if err != nil {
		return fmt.Errorf("job report: %w", err)
	}
	var events []jobs.Event
	for {
		e, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("job report: %w", err)
		}
		events = append(events, curatorclient.EventFromProto(e))
	}
	if pj, err = client.GetJob(ctx, &curatorv1.GetJobRequest{Id: id}); err != nil {
		return fmt.Errorf("job report: %w", err)
	}
	j, err := curatorclient.JobFromProto(pj)
	if err != nil {
		return fmt.Errorf("job report: %w", err)
	}
	r := jobreport.Report{Job: j, Events: events, Relation: "(not stated by this curator)", Generated: time.Now().UTC()}
	if q, err := client.QuoteJob(ctx, &curatorv1.QuoteJobRequest{Spec: pj.GetSpec()}); err == nil {
		r.Relation, r.Forecast = q.GetRelation(), curatorclient.ForecastFromProto(q.GetKusnerForecast())
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

func terminal(s curatorv1.JobState) bool {
	return s == curatorv1.JobState_JOB_STATE_SUCCEEDED || s == curatorv1.JobState_JOB_STATE_FAILED || s == curatorv1.JobState_JOB_STATE_CANCELLED
}
