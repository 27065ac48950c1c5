// Command anvil-bench runs Anvil's performance measurements on real
// apiservers and prints them as a table of ratios against baselines
// measured in the same run. `make bench` runs it; see
// docs/reference/performance.md for what each row means.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/anvil/anvil/internal/dev/perf"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "anvil-bench:", err)
		os.Exit(1)
	}
}

func run() error {
	clusterList := flag.String("clusters", "1,4,16", "P1: numbers of compute clusters, comma-separated")
	samples := flag.Int("samples", 20, "repetitions per measurement")
	only := flag.String("only", "P1,P2,P3,P4", "measurements to run, comma-separated, one after the other")
	logPath := flag.String("log", "", "file for the operator's log (default: discarded)")
	flag.IntVar(&p4Scale.NodesPerCluster, "p4-nodes", p4Scale.NodesPerCluster, "P4: kwok nodes per compute cluster")
	flag.IntVar(&p4Scale.PoolsPerCluster, "p4-pools", p4Scale.PoolsPerCluster, "P4: pools per compute cluster")
	flag.IntVar(&idle.Pools, "idle-pools", 30, "P3: settled pools, each with one node running a real nova-compute")
	flag.DurationVar(&idle.Window, "idle-window", 3*time.Minute, "P3: how long the settled operator is observed")
	flag.Parse()
	counts, err := parseCounts(*clusterList)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	logs, closeLog, err := openLog(*logPath)
	if err != nil {
		return err
	}
	defer closeLog()
	// envtest and the operator log through controller-runtime's logger.
	ctrllog.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(true)))
	fmt.Printf("anvil-bench %s: %d CPUs, GOMAXPROCS %d, %d samples each\n",
		time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), runtime.GOMAXPROCS(0), *samples)

	var rows []perf.Row
	for _, id := range strings.Split(*only, ",") {
		measure, ok := measurements[strings.TrimSpace(id)]
		if !ok {
			return fmt.Errorf("--only: %q is not one of %s", id, strings.Join(slices.Sorted(maps.Keys(measurements)), ", "))
		}
		r, err := measure(ctx, counts, *samples, logs)
		if err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		rows = append(rows, r...)
	}
	fmt.Println()
	return perf.WriteTable(os.Stdout, rows)
}

// idle are P3's options, set by flags.
var idle perf.IdleOptions

// measurements are the runs --only selects, by ID.
var measurements = map[string]func(ctx context.Context, counts []int, samples int, logs io.Writer) ([]perf.Row, error){
	"P1": func(ctx context.Context, counts []int, samples int, logs io.Writer) ([]perf.Row, error) {
		return perf.RunP1(ctx, counts, samples, logs, os.Stdout)
	},
	// P2 joins a fixed 10 nodes to the real Nova; --clusters and
	// --samples do not apply.
	"P2": func(ctx context.Context, _ []int, _ int, logs io.Writer) ([]perf.Row, error) {
		return perf.RunP2(ctx, logs, os.Stdout)
	},
	// P4 runs once at p4Scale; --samples and --clusters do not apply.
	"P4": func(ctx context.Context, _ []int, _ int, logs io.Writer) ([]perf.Row, error) {
		return perf.RunP4(ctx, p4Scale, logs, os.Stdout)
	},
	// P3 runs the real OpenStack services: one run at a time per machine.
	"P3": func(ctx context.Context, _ []int, _ int, logs io.Writer) ([]perf.Row, error) {
		if idle.Pools < 1 || idle.Window < time.Minute {
			return nil, fmt.Errorf("--idle-pools must be at least 1 and --idle-window at least 1m")
		}
		return perf.RunP3(ctx, idle, logs, os.Stdout)
	},
}

// p4Scale is P4's size, issue #18's unless --p4-nodes or --p4-pools say
// otherwise.
var p4Scale = perf.DefaultScale

func parseCounts(list string) ([]int, error) {
	var counts []int
	for f := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 25 {
			return nil, fmt.Errorf("--clusters: %q is not a number from 1 to 25", f)
		}
		counts = append(counts, n)
	}
	return counts, nil
}

func openLog(path string) (io.Writer, func(), error) {
	if path == "" {
		return io.Discard, func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { _ = f.Close() }, nil
}
