package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/recallhq/recall/bench"
	"github.com/recallhq/recall/worker"
)

func init() {
	register("bench", "measure throughput, lag, cost per turn, reads, memory and search against the machine's Postgres and NATS", runBench)
}

func runBench(ctx context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("recall bench", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	databaseURL := fs.String("database-url", cmp.Or(env.Getenv("DATABASE_URL"), defaultDatabaseURL),
		"Postgres URL; the benchmark creates a database of its own on that server and drops it at the end (env DATABASE_URL)")
	natsURL := fs.String("nats-url", cmp.Or(env.Getenv("NATS_URL"), defaultNATSURL),
		"NATS server URL; the benchmark uses streams and subjects of its own and deletes them at the end (env NATS_URL)")
	concurrency := worker.DefaultConcurrency
	if s := env.Getenv("RECALL_CONCURRENCY"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			concurrency = n
		}
	}
	fs.IntVar(&concurrency, "concurrency", concurrency, "worker concurrency, and the baseline's goroutines and River workers (env RECALL_CONCURRENCY)")
	quick := fs.Bool("quick", false, "a reduced version of every scenario (about a minute)")
	lagRate := fs.Float64("lag-rate", 0, "events per second of the lag scenario (default: half of the pipeline's maximum), to compare lag at the same load")
	capacity := fs.Float64("capacity", 0, "events per second taken as the paced scenario's capacity instead of searching for it, to compare lag and cost at the same load")
	asJSON := fs.Bool("json", false, "print one JSON object instead of the table")
	only := fs.String("only", "", "comma-separated scenarios to run: "+strings.Join(bench.Scenarios, ", ")+" (default all)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the benchmark process (pipeline, API and load) to this file")
	sqlStats := fs.Bool("sqlstats", false, "add up the client-side time of each SQL statement per scenario and print the top ones")
	executable := fs.String("recall", "", "the recall binary run as the child worker and API (default: this one), to measure another build under the same load")
	tiny := fs.Bool("tiny", false, "smoke-test sizes, for the command's own test")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: recall bench [flags]")
		fmt.Fprintln(fs.Output())
		fmt.Fprintln(fs.Output(), upperFirst(commands["bench"].summary)+".")
		fmt.Fprintln(fs.Output(), "Runs each scenario beside its baseline in the same run and prints medians and ratios.")
		fmt.Fprintln(fs.Output())
		fs.VisitAll(func(f *flag.Flag) {
			if f.Name == "tiny" {
				return // hidden
			}
			name, usage := flag.UnquoteUsage(f)
			fmt.Fprintf(fs.Output(), "  -%s %s\n    \t%s\n", f.Name, name, usage)
		})
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg := &bench.Config{
		DatabaseURL: *databaseURL,
		NATSURL:     *natsURL,
		Concurrency: concurrency,
		LagRate:     *lagRate,
		Capacity:    *capacity,
		Quick:       *quick || *tiny,
		Tiny:        *tiny,
		Progress:    env.Stderr,
		SQLStats:    *sqlStats,
		Executable:  *executable,
		// A profile or SQL statistics of the paced path need it in process.
		InProcess: *sqlStats || *cpuProfile != "",
	}
	if *only != "" {
		for _, s := range strings.Split(*only, ",") {
			cfg.Scenarios = append(cfg.Scenarios, strings.TrimSpace(s))
		}
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return res.WriteTable(env.Stdout)
}
