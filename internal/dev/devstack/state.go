package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
)

// state is what Up started, persisted so that Status and Down work from a
// new process.
type state struct {
	// Clusters are the kwokctl cluster names, management cluster first.
	Clusters []string `json:"clusters"`
	// Operator is the background operator process, if one was started.
	Operator *operatorState `json:"operator,omitempty"`
	// OpenStack is set once an Up ran with the OpenStack services.
	OpenStack *openStackState `json:"openstack,omitempty"`
	// PodRunners are the pod runner processes, by compute cluster.
	PodRunners map[string]*podRunnerState `json:"podRunners,omitempty"`
	// Gateway is the anvil-gateway process, once started.
	Gateway *gatewayState `json:"gateway,omitempty"`
}

// operatorState identifies the operator and how to reach it.
type operatorState struct {
	// Mode is OperatorModeChart or OperatorModeProcess; empty, from an
	// older devstack, means a process.
	Mode string `json:"mode,omitempty"`
	// PID is the process's, in process mode only: in chart mode the pod
	// runner owns the process.
	PID int `json:"pid,omitempty"`
	// BinarySHA256 tells whether a rebuilt binary needs a restart.
	BinarySHA256 string `json:"binarySHA256"`
	HealthAddr   string `json:"healthAddr"`
	MetricsAddr  string `json:"metricsAddr"`
	// WebhookPort is where the webhook server listens. A restarted operator
	// gets it again when it is free, so the registered URLs stay right.
	WebhookPort int `json:"webhookPort,omitempty"`
}

func (s *Stack) statePath() string { return filepath.Join(s.dir, "state.json") }

func (s *Stack) loadState() (*state, error) {
	raw, err := os.ReadFile(s.statePath())
	if errors.Is(err, os.ErrNotExist) {
		return &state{}, nil
	}
	if err != nil {
		return nil, err
	}
	st := &state{}
	if err := json.Unmarshal(raw, st); err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.statePath(), err)
	}
	return st, nil
}

func (s *Stack) saveState(st *state) error {
	raw, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.statePath() + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.statePath())
}

// healthPort and metricsPort are the ports of the recorded addresses, or 0.
func (op *operatorState) healthPort() int  { return addrPort(op.HealthAddr) }
func (op *operatorState) metricsPort() int { return addrPort(op.MetricsAddr) }

func addrPort(addr string) int {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(port)
	return n
}

// running tells whether the operator answers (chart mode) or its process
// lives (process mode).
func (op *operatorState) running(ctx context.Context) bool {
	if op == nil {
		return false
	}
	if op.Mode == OperatorModeChart {
		return healthy(ctx, op.HealthAddr)
	}
	return processAlive(op.PID)
}
