package devstack

import (
	"fmt"
	"io"
	"time"
)

// progress prints one line per step with its number and duration, which
// reads well both on a terminal and in a CI log.
type progress struct {
	out     io.Writer
	total   int
	n       int
	started time.Time
}

func newProgress(out io.Writer, total int) *progress { return &progress{out: out, total: total} }

func (p *progress) start(title string) {
	p.n++
	p.started = time.Now()
	fmt.Fprintf(p.out, "[%d/%d] %s ...\n", p.n, p.total, title)
}

func (p *progress) done(detail string) {
	if detail != "" {
		detail = ": " + detail
	}
	fmt.Fprintf(p.out, "      ok in %s%s\n", time.Since(p.started).Round(100*time.Millisecond), detail)
}

func (p *progress) fail(err error) {
	fmt.Fprintf(p.out, "      FAILED after %s: %v\n", time.Since(p.started).Round(100*time.Millisecond), err)
}
