package testenv

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/anvil/anvil/internal/dev/procgroup"
)

// Run is the body of an integration package's TestMain: it starts one
// Environment for the whole package, runs the tests, and stops it. With
// -short it starts nothing, and tests that call Require skip.
//
//	var env *testenv.Environment
//	func TestMain(m *testing.M) { os.Exit(testenv.Run(m, testenv.Options{ComputeClusters: 2}, &env)) }
func Run(m *testing.M, opts Options, env **Environment) int {
	flag.Parse()
	// envtest and client-go helpers log through controller-runtime's global
	// logger; left unset, it prints a stack trace and a warning into every
	// failing package's output. The operators a test starts log through
	// their own managers' loggers, not this one.
	ctrllog.SetLogger(logr.Discard())
	if testing.Short() || (opts.Long != "" && SkipsLongSuites()) {
		if !testing.Short() {
			skipReason = "long suite: `make " + opts.Long + "` runs it (" + SkipLongSuitesEnv + " is set)"
		}
		code := m.Run()
		procgroup.Shutdown()
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	e, err := Start(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	*env = e
	code := m.Run()
	// Whatever a pod runner of this package still runs ends before the
	// clusters do, the workers its services forked included.
	procgroup.Shutdown()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stopping: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// skipReason is what Require says when Run started no Environment.
var skipReason = "integration test: needs real apiservers (run without -short)"

// Require skips the test when no Environment runs: under -short, where
// only unit tests run, and in a long-suite package that the run leaves out.
func Require(t testing.TB, env *Environment) *Environment {
	t.Helper()
	if env == nil {
		t.Skip(skipReason)
	}
	return env
}
