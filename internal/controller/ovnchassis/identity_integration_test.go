package ovnchassis_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/ovnchassis"
	"github.com/anvil/anvil/internal/dev/ovntest"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// assertNodeIdentity checks what a settled chassis gave node: a Secret on
// the management cluster that the chassis controls, whose certificate
// names the node's system-id; its copy on compute with the same
// certificate; the same files installed on the node, the key readable by
// its owner alone; the status recording that certificate; and the node's
// Chassis row in the Southbound under that system-id. It returns the
// system-id.
func assertNodeIdentity(t *testing.T, compute *testenv.Cluster, ch *ovnv1alpha1.OVNChassis, node string, sb []string) string {
	t.Helper()
	var rec ovnv1alpha1.ChassisNodeStatus
	for _, n := range ch.Status.Nodes {
		if n.Name == node {
			rec = n
		}
	}
	if rec.SystemID == "" || rec.IdentityHash == "" {
		t.Fatalf("status of node %s = %+v, want a system-id and an identity hash", node, rec)
	}
	name := ovnchassis.IdentityName(ch, node)
	issued := &corev1.Secret{}
	if err := env.Management.Client.Get(context.Background(), client.ObjectKey{Namespace: ch.Namespace, Name: name}, issued); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(issued); ref == nil || ref.Kind != "OVNChassis" || ref.Name != ch.Name {
		t.Errorf("the issued identity %s is controlled by %+v, want the chassis", name, ref)
	}
	if cn := commonName(t, issued.Data["tls.crt"]); cn != rec.SystemID {
		t.Errorf("the identity's common name is %q, want the node's system-id %q", cn, rec.SystemID)
	}
	if got := ovnchassis.IdentityHash(issued); got != rec.IdentityHash {
		t.Errorf("status records identity %s, the issued one is %s", rec.IdentityHash, got)
	}
	delivered := secretData(t, compute, name)
	if !bytes.Equal(delivered["tls.crt"], issued.Data["tls.crt"]) || len(delivered) != 3 {
		t.Errorf("the copy on %s holds %d keys and another certificate", compute.Name, len(delivered))
	}
	assertInstalled(t, compute.Name, node, issued.Data)
	out, err := ovntest.OVS(t, "ovn-sbctl", append(sb, "--bare", "--columns=name", "find", "Chassis", "hostname="+node)...)
	if err != nil || strings.TrimSpace(out) != rec.SystemID {
		t.Errorf("the Southbound's chassis of %s is %q (%v), want %s", node, out, err, rec.SystemID)
	}
	return rec.SystemID
}

// assertInstalled compares the files in the runner's stand-in for the
// node's identity directory with the issued ones.
func assertInstalled(t *testing.T, cluster, node string, want map[string][]byte) {
	t.Helper()
	dir := filepath.Join(runnerDir, cluster, node, "host", "etc", "ovn", "chassis-tls")
	for k, v := range want {
		f := filepath.Join(dir, k)
		got, err := os.ReadFile(f)
		if err != nil || !bytes.Equal(got, v) {
			t.Errorf("%s on node %s differs from the issued identity (%v)", k, node, err)
		}
		if st, err := os.Stat(f); err == nil && k == "tls.key" && st.Mode().Perm() != 0o600 {
			t.Errorf("the node's key has mode %o, want 600", st.Mode().Perm())
		}
	}
}

// assertIdentityGone waits until node's identity is gone from both
// clusters: Certificate and Secret on the management cluster, copy on
// compute.
func assertIdentityGone(t *testing.T, compute *testenv.Cluster, ch *ovnv1alpha1.OVNChassis, node string) {
	t.Helper()
	name := ovnchassis.IdentityName(ch, node)
	for _, at := range []struct {
		c   *testenv.Cluster
		obj client.Object
	}{
		{env.Management, &cmv1.Certificate{}},
		{env.Management, &corev1.Secret{}},
		{compute, &corev1.Secret{}},
	} {
		ovntest.Eventually(t, time.Minute, at.c.Name+" loses identity "+name, func() error {
			err := at.c.Client.Get(context.Background(), client.ObjectKey{Namespace: ch.Namespace, Name: name}, at.obj)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return errorf("still there (%v)", err)
		})
	}
}

// commonName reads the subject's common name of a PEM certificate.
func commonName(t *testing.T, pemData []byte) string {
	t.Helper()
	block, _ := pem.Decode(pemData)
	if block == nil {
		t.Fatal("no PEM block in the certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.Subject.CommonName
}
