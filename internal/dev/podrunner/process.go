package podrunner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/anvil/anvil/internal/dev/procgroup"
)

// errShutDown is the answer of a test binary that has already ended the
// programs it started: it starts no more.
var errShutDown = errors.New("the test binary is shutting down: no new program starts")

// process is one run of a container's program.
type process struct {
	cmd     *exec.Cmd
	pid     int
	started time.Time
	done    chan struct{}
	// exitCode is valid once done is closed: the program's exit code, or
	// 128 plus the signal that killed it, as a container runtime reports.
	exitCode int32
}

// startProcess starts cmd with env as its whole environment, in dir, with
// its output appended to logPath. Credentials reach the program only through
// env, never through its arguments, because any local user can read a
// process's arguments.
func startProcess(c Command, env []string, dir, logPath string) (*process, error) {
	if procgroup.Closed() {
		return nil, errShutDown
	}
	for _, d := range c.Dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	for p, data := range c.Files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return nil, err
		}
	}
	for p, data := range c.Executables {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, data, 0o700); err != nil {
			return nil, err
		}
	}
	if len(c.PathDirs) > 0 {
		env = prependPath(env, c.PathDirs)
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	closeLogs := logFile.Close
	if c.LogCopy != "" {
		copyFile, err := os.OpenFile(c.LogCopy, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			_ = logFile.Close()
			return nil, err
		}
		// exec copies through a pipe until the program ends; Wait returns
		// only after the copy, so both files close after the last line.
		out := io.MultiWriter(logFile, copyFile)
		cmd.Stdout, cmd.Stderr = out, out
		closeLogs = func() error { return errors.Join(logFile.Close(), copyFile.Close()) }
	}
	// A process group of its own lets the runner stop everything the
	// program started, the way a container runtime stops a container.
	// Pdeathsig takes the program down with the runner if the runner dies
	// without stopping it, so no orphan outlives a test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = closeLogs()
		return nil, err
	}
	p := &process{cmd: cmd, pid: cmd.Process.Pid, started: time.Now(), done: make(chan struct{})}
	// The test binary kills the group when it exits, if the runner has not.
	// A binary already past that point refuses it, and the program ends at
	// once, as it would have a moment earlier.
	if !procgroup.Add(p.pid) {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
	go func() {
		err := cmd.Wait()
		_ = closeLogs()
		p.exitCode = exitCodeOf(cmd.ProcessState, err)
		// Whatever the program left behind in its group goes with it, as
		// the rest of a container goes when its main process ends.
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		procgroup.Done(p.pid)
		close(p.done)
	}()
	return p, nil
}

// exitCodeOf converts how a process ended into a container exit code.
func exitCodeOf(state *os.ProcessState, err error) int32 {
	if state == nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			state = exitErr.ProcessState
		}
	}
	if state == nil {
		return startErrorExitCode
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int32(ws.Signal())
	}
	return int32(state.ExitCode())
}

// stop ends the process: SIGTERM to its group, then SIGKILL once grace has
// passed. It returns when the process has exited.
func (p *process) stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.pid, syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		<-p.done
	}
}

// containerID is the ID a process run reports, from which a reader can
// tell a real process from a simulated container and find its PID.
func processContainerID(pid int) string { return fmt.Sprintf("process://%d", pid) }

// simulatedContainerID is the ID of a simulated container.
func simulatedContainerID(namespace, pod, container string) string {
	return fmt.Sprintf("simulated://%s/%s/%s", namespace, pod, container)
}

// prependPath puts dirs in front of env's PATH, keeping the rest of env.
func prependPath(env, dirs []string) []string {
	out := make([]string, 0, len(env)+1)
	found := false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			kv = "PATH=" + strings.Join(append(append([]string(nil), dirs...), v), ":")
			found = true
		}
		out = append(out, kv)
	}
	if !found {
		out = append(out, "PATH="+strings.Join(append(append([]string(nil), dirs...), basePath), ":"))
	}
	return out
}
