package testenv_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/dev/testenv"
)

// TestIntegrationCertManagerIssuesAndRenewsFromTheCA runs the real
// cert-manager controller against the management cluster: a Certificate
// from the CA ClusterIssuer becomes a Secret whose leaf chains to its
// ca.crt for both server and client use, and a renewal triggered the way
// `cmctl renew` does it replaces the certificate.
func TestIntegrationCertManagerIssuesAndRenewsFromTheCA(t *testing.T) {
	e := testenv.Require(t, env)
	c := e.Management.Client
	cm := testenv.StartCertManager(t, e.Management)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	crt := &cmv1.Certificate{
		ObjectMeta: metav1.ObjectMeta{Name: "cm-it-leaf", Namespace: testenv.WorkloadNamespace},
		Spec: cmv1.CertificateSpec{
			SecretName:  "cm-it-leaf",
			CommonName:  "cm-it-leaf",
			DNSNames:    []string{"cm-it-leaf.openstack.svc"},
			IPAddresses: []string{"127.0.0.1"},
			Usages:      []cmv1.KeyUsage{cmv1.UsageDigitalSignature, cmv1.UsageServerAuth, cmv1.UsageClientAuth},
			IssuerRef:   cmmeta.IssuerReference{Name: testenv.CAClusterIssuer, Kind: cmv1.ClusterIssuerKind, Group: "cert-manager.io"},
			PrivateKey:  &cmv1.CertificatePrivateKey{Algorithm: cmv1.ECDSAKeyAlgorithm, Size: 256, RotationPolicy: cmv1.RotationPolicyAlways},
		},
	}
	if err := c.Create(ctx, crt); err != nil {
		t.Fatalf("creating the Certificate: %v", err)
	}
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), crt)
		_ = c.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: crt.Spec.SecretName, Namespace: crt.Namespace}})
	})

	first := waitIssued(ctx, t, c, crt, nil, cm.LogPath)
	checkLeaf(t, first)
	caSecret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: testenv.CertManagerNamespace, Name: testenv.CASecret}, caSecret); err != nil {
		t.Fatalf("reading the CA Secret: %v", err)
	}
	if !bytes.Equal(first.Data["ca.crt"], caSecret.Data[corev1.TLSCertKey]) {
		t.Errorf("the leaf's ca.crt is not the CA of %s/%s", testenv.CertManagerNamespace, testenv.CASecret)
	}

	if err := testenv.TriggerRenewal(ctx, c, crt); err != nil {
		t.Fatalf("triggering the renewal: %v", err)
	}
	second := waitIssued(ctx, t, c, crt, first.Data[corev1.TLSCertKey], cm.LogPath)
	checkLeaf(t, second)
	if bytes.Equal(first.Data[corev1.TLSPrivateKeyKey], second.Data[corev1.TLSPrivateKeyKey]) {
		t.Errorf("the renewal kept the private key, but the rotation policy is Always")
	}
	// The controller handles keys; its log must carry none of them.
	raw, err := os.ReadFile(cm.LogPath)
	if err != nil {
		t.Fatalf("reading cert-manager's log: %v", err)
	}
	if bytes.Contains(raw, []byte("PRIVATE KEY")) {
		t.Errorf("cert-manager's log %s contains a private key", cm.LogPath)
	}
}

// waitIssued waits until the Certificate is Ready for its generation and
// its Secret holds all three keys, with a tls.crt other than previous, and
// returns the Secret.
func waitIssued(ctx context.Context, t *testing.T, c client.Client, crt *cmv1.Certificate, previous []byte, log string) *corev1.Secret {
	t.Helper()
	secret := &corev1.Secret{}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		cur := &cmv1.Certificate{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(crt), cur); err != nil {
			return false, err
		}
		if !certificateReady(cur) {
			return false, nil
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: crt.Namespace, Name: crt.Spec.SecretName}, secret); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey, "ca.crt"} {
			if len(secret.Data[k]) == 0 {
				return false, nil
			}
		}
		return !bytes.Equal(secret.Data[corev1.TLSCertKey], previous), nil
	})
	if err != nil {
		t.Fatalf("the Certificate %s was not issued: %v; see %s", crt.Name, err, log)
	}
	return secret
}

// certificateReady reports cert-manager's Ready for the current spec, with
// no issuance in flight.
func certificateReady(crt *cmv1.Certificate) bool {
	ready := false
	for _, cond := range crt.Status.Conditions {
		switch {
		case cond.Type == cmv1.CertificateConditionIssuing && cond.Status == cmmeta.ConditionTrue:
			return false
		case cond.Type == cmv1.CertificateConditionReady:
			ready = cond.Status == cmmeta.ConditionTrue && cond.ObservedGeneration == crt.Generation
		}
	}
	return ready
}

// checkLeaf verifies the Secret's key pair and that the leaf chains to
// ca.crt for server and for client use, with the IP SAN it asked for.
func checkLeaf(t *testing.T, secret *corev1.Secret) {
	t.Helper()
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		t.Fatalf("tls.crt and tls.key do not form a key pair: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatalf("parsing the leaf: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data["ca.crt"]) {
		t.Fatal("ca.crt holds no certificate")
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		opts := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}}
		if _, err := leaf.Verify(opts); err != nil {
			t.Errorf("the leaf does not verify against ca.crt for extended key usage %v: %v", usage, err)
		}
	}
	if len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("the leaf's IP SANs are %v, want [127.0.0.1]", leaf.IPAddresses)
	}
}
