package procgroup

import (
	"os/exec"
	"syscall"
	"testing"
)

func TestShutdownRefusesNewGroups(t *testing.T) {
	var s Set
	if !s.Add(1 << 30) {
		t.Fatal("an open set refused a group")
	}
	s.Done(1 << 30)
	if s.Closed() {
		t.Fatal("a set is closed before its shutdown")
	}
	s.Shutdown()
	if !s.Closed() {
		t.Fatal("a shut down set is not closed")
	}
	if s.Add(1<<30 + 1) {
		t.Error("a shut down set took a new group")
	}
	if s.Live(1<<30 + 1) {
		t.Error("a refused group is recorded")
	}
}

func TestShutdownKillsRecordedGroups(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var s Set
	s.Add(cmd.Process.Pid)
	s.Shutdown()
	if err := <-done; err == nil {
		t.Fatal("the recorded group's leader ended cleanly; want it killed")
	}
}
