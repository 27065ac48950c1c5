package devstack

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/anvil/anvil/internal/dev/gateway"
	"github.com/anvil/anvil/internal/dev/testenv"
)

const (
	// GatewayClassName is the devstack's GatewayClass, claimed by the
	// anvil-gateway process.
	GatewayClassName = "anvil-dev"
	// GatewayName is the Gateway in the openstack namespace that publishes
	// the Nova metadata API.
	GatewayName = "openstack-gw"
	// MetadataListener is the Gateway's HTTPS listener for the metadata API.
	MetadataListener = "https-nova-metadata"
	// MetadataHostname is the listener's hostname. nip.io names do not
	// resolve offline, so clients pin it to 127.0.0.1 (curl --resolve).
	MetadataHostname = "nova-metadata.127-0-0-1.nip.io"
	// MetadataTLSSecret holds the listener's self-signed certificate, with
	// ca.crt for the clients that must trust it.
	MetadataTLSSecret = "nova-metadata-nip-io-tls"
	// GatewayHostPort serves the listener port 443 without privileges.
	GatewayHostPort = 8443
)

// gatewayState identifies the anvil-gateway process.
type gatewayState struct {
	PID int `json:"pid"`
	// BinarySHA256 tells whether a rebuilt binary needs a restart.
	BinarySHA256 string `json:"binarySHA256"`
}

func (s *Stack) gatewayLog() string { return filepath.Join(s.dir, "gateway.log") }

// startGateway installs the Gateway API CRDs on the management cluster, runs
// anvil-gateway there (kept when the same binary still runs), and creates
// the GatewayClass, the metadata certificate Secret and the Gateway, then
// waits until the Gateway is programmed.
func (s *Stack) startGateway(ctx context.Context, st *state) (string, error) {
	cfg, err := s.clusterConfig(ctx, ManagementCluster)
	if err != nil {
		return "", err
	}
	if err := gateway.InstallCRDs(ctx, cfg); err != nil {
		return "", fmt.Errorf("installing the Gateway API CRDs: %w", err)
	}
	action, err := s.ensureGatewayProcess(ctx, st)
	if err != nil {
		return "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: gateway.NewScheme()})
	if err != nil {
		return "", err
	}
	if err := ensureGatewayObjects(ctx, c, time.Now()); err != nil {
		return "", err
	}
	if err := waitGatewayProgrammed(ctx, c, st.Gateway.PID); err != nil {
		return "", fmt.Errorf("%w; see %s", err, s.gatewayLog())
	}
	return fmt.Sprintf("%s pid %d, Gateway %s/%s serves https://%s:%d (curl --resolve %s:%d:127.0.0.1), log %s",
		action, st.Gateway.PID, testenv.WorkloadNamespace, GatewayName, MetadataHostname, GatewayHostPort,
		MetadataHostname, GatewayHostPort, s.gatewayLog()), nil
}

// ensureGatewayProcess builds anvil-gateway and starts it unless the same
// binary already runs. It returns what it did.
func (s *Stack) ensureGatewayProcess(ctx context.Context, st *state) (string, error) {
	binary := filepath.Join(s.dir, "bin", "anvil-gateway")
	build := exec.CommandContext(ctx, "go", "build", "-o", binary, "./internal/dev/cmd/anvil-gateway")
	build.Dir = s.root
	build.Stdout, build.Stderr = indent(s.out), indent(s.out)
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building the gateway: %w", err)
	}
	sum, err := fileSHA256(binary)
	if err != nil {
		return "", err
	}
	if prev := st.Gateway; prev != nil {
		if prev.BinarySHA256 == sum && processAlive(prev.PID) {
			return "already running as", nil
		}
		if err := stopProcess(prev.PID, 15*time.Second); err != nil {
			return "", err
		}
		st.Gateway = nil
	}
	logFile, err := os.OpenFile(s.gatewayLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", err
	}
	defer logFile.Close()
	cmd := exec.Command(binary,
		"--kubeconfig="+s.operatorKubeconfigPath(),
		"--listen-address=127.0.0.1",
		"--port-map=443="+strconv.Itoa(GatewayHostPort),
		"--controller-name="+gateway.DefaultControllerName,
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A session of its own, so the gateway outlives this command and a
	// Ctrl-C in the terminal that ran `up` does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting the gateway: %w", err)
	}
	st.Gateway = &gatewayState{PID: cmd.Process.Pid, BinarySHA256: sum}
	_ = cmd.Process.Release()
	return "started as", os.WriteFile(filepath.Join(s.dir, "gateway.pid"), []byte(strconv.Itoa(st.Gateway.PID)+"\n"), 0o600)
}

// ensureGatewayObjects creates the GatewayClass and the certificate Secret
// when missing, and makes the Gateway's spec the devstack's.
func ensureGatewayObjects(ctx context.Context, c client.Client, now time.Time) error {
	gc := &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: GatewayClassName},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: gateway.DefaultControllerName},
	}
	if err := c.Create(ctx, gc); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("the GatewayClass %s: %w", GatewayClassName, err)
	}
	if err := ensureMetadataCertificate(ctx, c, now); err != nil {
		return err
	}
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: GatewayName, Namespace: testenv.WorkloadNamespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, gw, func() error {
		gw.Spec = gatewaySpec()
		return nil
	}); err != nil {
		return fmt.Errorf("the Gateway %s/%s: %w", testenv.WorkloadNamespace, GatewayName, err)
	}
	return nil
}

// gatewaySpec is the devstack Gateway: one HTTPS listener for the metadata
// API, admitting routes of its own namespace.
func gatewaySpec() gatewayv1.GatewaySpec {
	host := gatewayv1.Hostname(MetadataHostname)
	same := gatewayv1.NamespacesFromSame
	return gatewayv1.GatewaySpec{
		GatewayClassName: GatewayClassName,
		Listeners: []gatewayv1.Listener{{
			Name: MetadataListener, Port: 443, Protocol: gatewayv1.HTTPSProtocolType, Hostname: &host,
			TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: MetadataTLSSecret}}},
			AllowedRoutes: &gatewayv1.AllowedRoutes{
				Namespaces: &gatewayv1.RouteNamespaces{From: &same},
			},
		}},
	}
}

// ensureMetadataCertificate creates the listener's self-signed certificate
// Secret once; later runs keep it, so clients that trust its ca.crt keep
// working. Only an expired or unreadable certificate is replaced.
func ensureMetadataCertificate(ctx context.Context, c client.Client, now time.Time) error {
	key := client.ObjectKey{Namespace: testenv.WorkloadNamespace, Name: MetadataTLSSecret}
	existing := &corev1.Secret{}
	err := c.Get(ctx, key, existing)
	switch {
	case err == nil && usableCertificate(existing, now):
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("the Secret %s: %w", key, err)
	}
	certPEM, keyPEM, genErr := selfSignedMetadataCertificate(now)
	if genErr != nil {
		return genErr
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
	_, err = controllerutil.CreateOrUpdate(ctx, c, secret, func() error {
		secret.Type = corev1.SecretTypeTLS
		// The certificate is its own CA: ca.crt is what clients such as
		// the metadata agent's auth_ca_cert trust.
		secret.Data = map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, "ca.crt": certPEM}
		return nil
	})
	if err != nil {
		return fmt.Errorf("the Secret %s: %w", key, err)
	}
	return nil
}

// usableCertificate tells whether a Secret holds a key pair valid at now.
func usableCertificate(secret *corev1.Secret, now time.Time) bool {
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil || secret.Type != corev1.SecretTypeTLS {
		return false
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	return err == nil && now.Before(cert.NotAfter)
}

// selfSignedMetadataCertificate returns a self-signed certificate for the
// metadata hostname and 127.0.0.1, and its key, as PEM.
func selfSignedMetadataCertificate(now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: MetadataHostname},
		DNSNames:     []string{MetadataHostname},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     now.Add(caValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		// A CA as well, so that it can be its own trust anchor.
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// waitGatewayProgrammed waits until the Gateway is Programmed for its
// current generation, or the gateway process exits.
func waitGatewayProgrammed(ctx context.Context, c client.Client, pid int) error {
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if !processAlive(pid) {
			return false, fmt.Errorf("the gateway (pid %d) exited", pid)
		}
		gw := &gatewayv1.Gateway{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: testenv.WorkloadNamespace, Name: GatewayName}, gw); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		cond := apimeta.FindStatusCondition(gw.Status.Conditions, string(gatewayv1.GatewayConditionProgrammed))
		return cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == gw.Generation, nil
	})
}

// stopGateway stops the recorded gateway process.
func (s *Stack) stopGateway(st *state) error {
	if st.Gateway == nil {
		return nil
	}
	fmt.Fprintf(s.out, "Stopping the gateway (pid %d)\n", st.Gateway.PID)
	if err := stopProcess(st.Gateway.PID, 15*time.Second); err != nil {
		return err
	}
	st.Gateway = nil
	return nil
}

// gatewayStatus renders "<state>\t<detail>" for the gateway process and its
// Gateway.
func (s *Stack) gatewayStatus(ctx context.Context, st *state) string {
	switch {
	case st.Gateway == nil:
		return "not started\t"
	case !processAlive(st.Gateway.PID):
		return fmt.Sprintf("stopped\tpid %d is gone; see %s", st.Gateway.PID, s.gatewayLog())
	}
	detail := fmt.Sprintf("pid %d, https://%s:%d, log %s", st.Gateway.PID, MetadataHostname, GatewayHostPort, s.gatewayLog())
	cfg, err := s.clusterConfig(ctx, ManagementCluster)
	if err != nil || !reachable(ctx, cfg) {
		return "running\t" + detail
	}
	c, err := client.New(cfg, client.Options{Scheme: gateway.NewScheme()})
	if err != nil {
		return "running\t" + detail
	}
	gw := &gatewayv1.Gateway{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: testenv.WorkloadNamespace, Name: GatewayName}, gw); err != nil {
		return "running\t" + detail + "; Gateway " + GatewayName + ": " + err.Error()
	}
	cond := apimeta.FindStatusCondition(gw.Status.Conditions, string(gatewayv1.GatewayConditionProgrammed))
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return "not ready\t" + detail + "; Gateway " + GatewayName + " is not Programmed"
	}
	routes := int32(0)
	for _, l := range gw.Status.Listeners {
		routes += l.AttachedRoutes
	}
	return fmt.Sprintf("ready\t%s; %d route(s) attached", detail, routes)
}
