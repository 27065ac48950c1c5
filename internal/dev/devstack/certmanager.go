package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/dev/testenv"
)

// CAClusterIssuer is the devstack's ClusterIssuer for TLS, signing with a
// self-signed CA kept in the cert-manager namespace. The sample objects and
// the guides name it in an OVNCentral's tls.issuerRef. It is the name the
// integration tests use, so a manifest works in both.
const CAClusterIssuer = testenv.CAClusterIssuer

// certManagerState identifies the cert-manager controller process. It is
// kept in a file of its own, next to state.json, and goes with the state
// directory.
type certManagerState struct {
	PID int `json:"pid"`
	// BinarySHA256 tells whether a rebuilt binary needs a restart.
	BinarySHA256 string `json:"binarySHA256"`
}

func (s *Stack) certManagerLog() string { return filepath.Join(s.dir, "cert-manager.log") }

func (s *Stack) certManagerStatePath() string { return filepath.Join(s.dir, "cert-manager.json") }

// loadCertManagerState returns the recorded process, or nil when none was
// started.
func (s *Stack) loadCertManagerState() (*certManagerState, error) {
	raw, err := os.ReadFile(s.certManagerStatePath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	st := &certManagerState{}
	if err := json.Unmarshal(raw, st); err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.certManagerStatePath(), err)
	}
	return st, nil
}

// saveCertManagerState records the process, or forgets it when st is nil.
func (s *Stack) saveCertManagerState(st *certManagerState) error {
	if st == nil {
		return ignoreNotExist(os.Remove(s.certManagerStatePath()))
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := s.certManagerStatePath() + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.certManagerStatePath())
}

// startCertManager installs cert-manager's CRDs on the management cluster,
// runs its controller there (kept when the same binary still runs), and
// creates the CA chain, then waits until CAClusterIssuer is Ready. Every
// object is created only when missing, so a second run writes nothing.
func (s *Stack) startCertManager(ctx context.Context, _ *state) (string, error) {
	defs, err := testenv.CertManagerCRDs(s.bin)
	if err != nil {
		return "", err
	}
	if err := s.applyCRDs(ctx, ManagementCluster, defs); err != nil {
		return "", err
	}
	action, pid, err := s.ensureCertManagerProcess()
	if err != nil {
		return "", err
	}
	c, err := s.clusterClient(ctx, ManagementCluster)
	if err != nil {
		return "", err
	}
	if err := testenv.EnsureCAClusterIssuer(ctx, c); err != nil {
		if !processAlive(pid) {
			err = fmt.Errorf("%w; the controller (pid %d) exited", err, pid)
		}
		return "", fmt.Errorf("%w; see %s", err, s.certManagerLog())
	}
	return fmt.Sprintf("%s pid %d, ClusterIssuer %s Ready (CA in Secret %s/%s), log %s",
		action, pid, CAClusterIssuer, testenv.CertManagerNamespace, testenv.CASecret, s.certManagerLog()), nil
}

// ensureCertManagerProcess starts the controller built by `make tools`
// unless the same binary already runs. It returns what it did and the pid.
func (s *Stack) ensureCertManagerProcess() (string, int, error) {
	binary := filepath.Join(s.bin, testenv.CertManagerBinary)
	sum, err := fileSHA256(binary)
	if err != nil {
		return "", 0, fmt.Errorf("%w; run 'make tools'", err)
	}
	prev, err := s.loadCertManagerState()
	if err != nil {
		return "", 0, err
	}
	if prev != nil {
		if prev.BinarySHA256 == sum && processAlive(prev.PID) {
			return "already running as", prev.PID, nil
		}
		if err := stopProcess(prev.PID, 15*time.Second); err != nil {
			return "", 0, err
		}
	}
	logFile, err := os.OpenFile(s.certManagerLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", 0, err
	}
	defer logFile.Close()
	// The management cluster's kubeconfig file carries the credential, so
	// none is in the arguments; the controller listens on no port.
	cmd := exec.Command(binary, testenv.CertManagerArgs(s.operatorKubeconfigPath())...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A session of its own, so the controller outlives this command and a
	// Ctrl-C in the terminal that ran `up` does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "", 0, fmt.Errorf("starting cert-manager: %w", err)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	return "started as", pid, s.saveCertManagerState(&certManagerState{PID: pid, BinarySHA256: sum})
}

// stopCertManager stops the recorded controller process. Its objects go
// with the management cluster.
func (s *Stack) stopCertManager() error {
	st, err := s.loadCertManagerState()
	if err != nil || st == nil {
		return err
	}
	fmt.Fprintf(s.out, "Stopping cert-manager (pid %d)\n", st.PID)
	if err := stopProcess(st.PID, 15*time.Second); err != nil {
		return err
	}
	return s.saveCertManagerState(nil)
}

// certManagerStatus renders "<state>\t<detail>" for the controller and its
// CA ClusterIssuer.
func (s *Stack) certManagerStatus(ctx context.Context) string {
	st, err := s.loadCertManagerState()
	switch {
	case err != nil:
		return "unknown\t" + err.Error()
	case st == nil:
		return "not started\t"
	case !processAlive(st.PID):
		return fmt.Sprintf("stopped\tpid %d is gone; see %s", st.PID, s.certManagerLog())
	}
	detail := fmt.Sprintf("pid %d, log %s", st.PID, s.certManagerLog())
	c, err := s.managementClientIfUp(ctx)
	if err != nil {
		return "running\t" + detail
	}
	issuer := &cmv1.ClusterIssuer{}
	if err := c.Get(ctx, client.ObjectKey{Name: CAClusterIssuer}, issuer); err != nil {
		return "running\t" + detail + "; ClusterIssuer " + CAClusterIssuer + ": " + err.Error()
	}
	if ready, message := testenv.ClusterIssuerReady(issuer); !ready {
		return "not ready\t" + detail + "; ClusterIssuer " + CAClusterIssuer + ": " + message
	}
	return "ready\t" + detail + "; ClusterIssuer " + CAClusterIssuer + " Ready"
}

func ignoreNotExist(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
