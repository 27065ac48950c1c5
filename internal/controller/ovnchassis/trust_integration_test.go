package ovnchassis_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/dev/ovntest"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// The security review's B6: a central trusts only its own CA. A central
// that names no issuer refuses the client key of a central in another
// namespace, even when that client trusts the right CA; a central that
// named the suite's shared ClusterIssuer and drops the reference moves to a
// CA of its own and then refuses the shared CA's keys; and a central that
// names an issuer again loses its own CA's objects.
func TestIntegrationCentralsTrustOnlyTheirOwnCA(t *testing.T) {
	e := startStack(t)
	testenv.StartCertManager(t, e.Management)
	ctx := context.Background()
	elsewhere := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ovn-elsewhere"}}
	if err := e.Management.Client.Create(ctx, elsewhere); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	shared := newCentralIn(t, testenv.WorkloadNamespace, "shared", 1, 32681, 32691,
		&ovnv1alpha1.IssuerReference{Name: testenv.CAClusterIssuer})
	own := newCentralIn(t, elsewhere.Name, "own", 1, 32701, 32711, nil)
	for _, c := range []*ovnv1alpha1.OVNCentral{shared, own} {
		reachable(t, c)
	}
	sharedSB, ownSB := "ssl:127.0.0.1:32691", "ssl:127.0.0.1:32711"
	shared = waitCentralAt(t, client.ObjectKeyFromObject(shared), anvilmeta.ReadyCondition, anvilmeta.AllReadyReason, 5*time.Minute)
	own = waitCentralAt(t, client.ObjectKeyFromObject(own), anvilmeta.ReadyCondition, anvilmeta.AllReadyReason, 5*time.Minute)

	sharedKey := identity(t, shared)
	ownKey := identity(t, own)
	assertAnswers(t, ownSB, ownKey.trusting(ownKey))
	assertAnswers(t, sharedSB, sharedKey.trusting(sharedKey))
	// The refused client trusts the database's CA, so a failure is the
	// server refusing the client, not the client refusing the server.
	assertRefused(t, ownSB, sharedKey.trusting(ownKey))

	// The way back: the reference dropped, the central moves to its own CA
	// and the keys of the shared one stop opening it.
	patchCentral(t, shared, `{"spec":{"tls":{"issuerRef":null}}}`)
	shared = waitCentralAt(t, client.ObjectKeyFromObject(shared), anvilmeta.ReadyCondition, anvilmeta.AllReadyReason, 3*time.Minute)
	if ready := conditionMessage(shared.Status.Conditions, ovnv1alpha1.TLSReadyCondition); !strings.Contains(ready, "own CA, Issuer shared-ca") {
		t.Errorf("TLSReady says %q, want the central's own CA", ready)
	}
	movedKey := identity(t, shared)
	if movedKey.caPEM == sharedKey.caPEM {
		t.Fatal("the client Secret still carries the shared CA")
	}
	assertAnswers(t, sharedSB, movedKey.trusting(movedKey))
	assertRefused(t, sharedSB, sharedKey.trusting(movedKey))
	assertRefused(t, sharedSB, ownKey.trusting(movedKey))

	// And forth: naming an issuer deletes the own CA's Issuers and
	// Certificate.
	patchCentral(t, own, fmt.Sprintf(`{"spec":{"tls":{"issuerRef":{"name":%q}}}}`, testenv.CAClusterIssuer))
	waitCentralAt(t, client.ObjectKeyFromObject(own), ovnv1alpha1.TLSReadyCondition, ovnv1alpha1.CertificatesIssuedReason, 3*time.Minute)
	for _, obj := range []client.Object{&cmv1.Issuer{}, &cmv1.Certificate{}} {
		key := client.ObjectKey{Namespace: own.Namespace, Name: "own-ca"}
		if err := e.Management.Client.Get(ctx, key, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s after the issuer was named: %v", obj, key, err)
		}
	}
	selfSigned := client.ObjectKey{Namespace: own.Namespace, Name: "own-selfsigned"}
	if err := e.Management.Client.Get(ctx, selfSigned, &cmv1.Issuer{}); !apierrors.IsNotFound(err) {
		t.Errorf("Issuer %s after the issuer was named: %v", selfSigned, err)
	}
}

// reachable makes the central's Southbound reachable through its node
// ports, where the test dials it.
func reachable(t *testing.T, c *ovnv1alpha1.OVNCentral) {
	t.Helper()
	patchCentral(t, c, `{"spec":{"southbound":{"externallyReachable":true}}}`)
}

// patchCentral merge-patches the central.
func patchCentral(t *testing.T, c *ovnv1alpha1.OVNCentral, patch string) {
	t.Helper()
	if err := env.Management.Client.Patch(context.Background(), c, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// waitCentralAt is waitCentral for a central in any namespace.
func waitCentralAt(t *testing.T, key client.ObjectKey, condType, reason string, timeout time.Duration) *ovnv1alpha1.OVNCentral {
	t.Helper()
	c := &ovnv1alpha1.OVNCentral{}
	waitCondition(t, key, c, func() []metav1.Condition { return c.Status.Conditions }, condType, reason, timeout)
	return c
}

// clientKey is a central's client identity as files: the key and
// certificate a client presents, and the CA it verifies the server with.
type clientKey struct {
	key, cert, ca string
	caPEM         string
}

// identity writes the central's published client identity to files.
func identity(t *testing.T, c *ovnv1alpha1.OVNCentral) clientKey {
	t.Helper()
	opts := ovntest.ClientTLS(t, env.Management.Client, client.ObjectKey{Namespace: c.Namespace, Name: c.Status.ClientSecretName})
	k := clientKey{
		key:  strings.TrimPrefix(opts[0], "--private-key="),
		cert: strings.TrimPrefix(opts[1], "--certificate="),
		ca:   strings.TrimPrefix(opts[2], "--ca-cert="),
	}
	pem, err := os.ReadFile(k.ca)
	if err != nil {
		t.Fatal(err)
	}
	k.caPEM = string(pem)
	return k
}

// trusting returns the options that present k's key and certificate and
// verify the server against server's CA.
func (k clientKey) trusting(server clientKey) []string {
	return []string{"--private-key=" + k.key, "--certificate=" + k.cert, "--ca-cert=" + server.ca}
}

// assertAnswers waits until the database at address lists its databases
// to a client with the options: the server has picked up its certificates.
func assertAnswers(t *testing.T, address string, opts []string) {
	t.Helper()
	ovntest.Eventually(t, 2*time.Minute, address+" answers its own client", func() error {
		_, err := ovntest.OVS(t, "ovsdb-client", append(append([]string{}, opts...), "--timeout=10", "list-dbs", address)...)
		return err
	})
}

// assertRefused fails unless the database at address refuses a client with
// the options, three times over a few seconds: one refusal could be a
// restart.
func assertRefused(t *testing.T, address string, opts []string) {
	t.Helper()
	for range 3 {
		if out, err := ovntest.OVS(t, "ovsdb-client", append(append([]string{}, opts...), "--timeout=5", "list-dbs", address)...); err == nil {
			t.Fatalf("%s answered a client of another CA: %s", address, out)
		}
		time.Sleep(time.Second)
	}
}
