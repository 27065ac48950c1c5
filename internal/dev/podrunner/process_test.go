package podrunner

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anvil/anvil/internal/dev/procgroup"
)

func TestProcessExitCodes(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   int32
	}{
		{"success", "exit 0", 0},
		{"failure", "exit 7", 7},
		{"killed by a signal", "kill -KILL $$", 128 + 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p, err := startProcess(Command{Path: "/bin/sh", Args: []string{"-c", tt.script}}, nil, dir, filepath.Join(dir, "log"))
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				t.Fatal("the process did not exit")
			}
			if p.exitCode != tt.want {
				t.Errorf("exit code = %d, want %d", p.exitCode, tt.want)
			}
		})
	}
}

func TestProcessEnvFilesAndLog(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "conf", "x.conf")
	cmd := Command{
		Path:  "/bin/sh",
		Args:  []string{"-c", `echo "out $GREETING"; echo err >&2; cat ` + conf},
		Files: map[string][]byte{conf: []byte("generated")},
		Dirs:  []string{filepath.Join(dir, "state")},
	}
	logPath := filepath.Join(dir, "logs", "c.log")
	p, err := startProcess(cmd, []string{"GREETING=hello"}, dir, logPath)
	if err != nil {
		t.Fatal(err)
	}
	<-p.done
	out, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); got != "out hello\nerr\ngenerated" {
		t.Errorf("log = %q", got)
	}
	if fi, err := os.Stat(conf); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("generated file: %v, %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "state")); err != nil {
		t.Error(err)
	}
}

func TestProcessStopKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	// The shell ignores TERM and starts a child that does too, so stop must
	// fall back to KILL for the whole group.
	pidFile := filepath.Join(dir, "child.pid")
	script := `trap "" TERM; sh -c 'trap "" TERM; echo $$ > ` + pidFile + `; while :; do sleep 0.1; done' & wait`
	p, err := startProcess(Command{Path: "/bin/sh", Args: []string{"-c", script}}, nil, dir, filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	child := waitPID(t, pidFile)
	start := time.Now()
	p.stop(300 * time.Millisecond)
	if time.Since(start) < 300*time.Millisecond {
		t.Error("stop did not wait for the grace period")
	}
	if p.exitCode != 128+9 {
		t.Errorf("exit code = %d, want 137", p.exitCode)
	}
	if !gone(child, 5*time.Second) {
		t.Errorf("child %d survived the stop", child)
	}
}

func TestKillAllEndsWhatAProgramForked(t *testing.T) {
	dir := t.TempDir()
	// The program forks a worker that ignores TERM, as a service's workers
	// may, and keeps running itself: nothing but KillAll ends either.
	pidFile := filepath.Join(dir, "worker.pid")
	script := `sh -c 'trap "" TERM; echo $$ > ` + pidFile + `; while :; do sleep 0.1; done' & wait`
	p, err := startProcess(Command{Path: "/bin/sh", Args: []string{"-c", script}}, nil, dir, filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	worker := waitPID(t, pidFile)
	procgroup.KillAll()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the program survived KillAll")
	}
	if !gone(worker, 5*time.Second) {
		t.Errorf("worker %d survived KillAll", worker)
	}
	if procgroup.Live(p.pid) {
		t.Error("an ended program's group is still registered")
	}
}

// waitPID reads the PID a test program writes into path.
func waitPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(data), "\n") {
			pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the program did not write its PID")
	return 0
}

// gone waits until pid no longer runs.
func gone(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// alive reports whether pid exists and is no zombie; a zombie runs nothing
// and waits only for its parent to collect it.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state is the field after the parenthesised command name.
	rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
	f := strings.Fields(rest)
	return len(f) > 0 && f[0] != "Z"
}
