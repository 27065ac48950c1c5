package ovncentral

import (
	"slices"
	"strings"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// testCentral is a central with every optional block left out.
func testCentral() *ovnv1alpha1.OVNCentral {
	return &ovnv1alpha1.OVNCentral{
		ObjectMeta: metav1.ObjectMeta{Name: "controlplane-ovn", Namespace: "openstack"},
		Spec:       ovnv1alpha1.OVNCentralSpec{TLS: ovnv1alpha1.OVNTLSSpec{IssuerRef: &ovnv1alpha1.IssuerReference{Name: "anvil-ca"}}},
	}
}

func TestBuildMemberService(t *testing.T) {
	c := testCentral()
	svc := BuildMemberService(c, Southbound, 2)
	if svc.Name != "controlplane-ovn-sb-2" || svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.Ports[0].NodePort != 0 {
		t.Errorf("internal member Service = %s %s %d", svc.Name, svc.Spec.Type, svc.Spec.Ports[0].NodePort)
	}
	if svc.Spec.Selector[podNameLabel] != "controlplane-ovn-sb-2" {
		t.Errorf("selector = %v", svc.Spec.Selector)
	}
	c.Spec.Southbound.ExternallyReachable = true
	c.Spec.Southbound.NodePortBase = ptr.To[int32](31000)
	svc = BuildMemberService(c, Southbound, 2)
	if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.Ports[0].NodePort != 31002 {
		t.Errorf("external member Service = %s %d, want NodePort 31002", svc.Spec.Type, svc.Spec.Ports[0].NodePort)
	}
}

func TestBuildCertificates(t *testing.T) {
	c := testCentral()
	certs := BuildCertificates(c)
	var names []string
	for _, cert := range certs {
		names = append(names, cert.Name)
		if cert.Spec.IssuerRef.Kind != "ClusterIssuer" || cert.Spec.IssuerRef.Name != "anvil-ca" {
			t.Errorf("%s issuer = %+v", cert.Name, cert.Spec.IssuerRef)
		}
	}
	if want := []string{"controlplane-ovn-nb-server", "controlplane-ovn-sb-server", "controlplane-ovn-client"}; !slices.Equal(names, want) {
		t.Errorf("certificates = %v, want %v", names, want)
	}
	// Raft members dial each other with their server certificate, and OVS
	// checks the extended key usage.
	if u := certs[0].Spec.Usages; !slices.Contains(u, cmv1.UsageServerAuth) || !slices.Contains(u, cmv1.UsageClientAuth) {
		t.Errorf("server usages = %v", u)
	}
	if u := certs[2].Spec.Usages; slices.Contains(u, cmv1.UsageServerAuth) || !slices.Contains(u, cmv1.UsageClientAuth) {
		t.Errorf("client usages = %v", u)
	}
	c.Spec.Relay = &ovnv1alpha1.OVNRelaySpec{}
	if n := len(BuildCertificates(c)); n != 4 {
		t.Errorf("with a relay: %d certificates, want 4", n)
	}
}

func TestDecideCertificate(t *testing.T) {
	cert := func(conds ...cmv1.CertificateCondition) *cmv1.Certificate {
		return &cmv1.Certificate{
			ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 2},
			Spec:       cmv1.CertificateSpec{SecretName: "c"},
			Status:     cmv1.CertificateStatus{Conditions: conds},
		}
	}
	ready := cmv1.CertificateCondition{Type: cmv1.CertificateConditionReady, Status: cmmeta.ConditionTrue, ObservedGeneration: 2}
	stale := cmv1.CertificateCondition{Type: cmv1.CertificateConditionReady, Status: cmmeta.ConditionTrue, ObservedGeneration: 1}
	failed := cmv1.CertificateCondition{Type: cmv1.CertificateConditionIssuing, Status: cmmeta.ConditionFalse, Reason: "Failed", Message: "no issuer"}
	tests := []struct {
		name    string
		cert    *cmv1.Certificate
		found   bool
		missing string
		want    CertificateState
		msg     string
	}{
		{"issued", cert(ready), true, "", CertificateIssued, ""},
		{"not issued yet", cert(), false, "", CertificateWaiting, "not issued yet"},
		{"ready for an older spec", cert(stale), true, "", CertificateWaiting, "not issued yet"},
		{"Secret missing", cert(ready), false, "", CertificateWaiting, "does not exist"},
		{"CA missing", cert(ready), true, "ca.crt", CertificateWaiting, "carries no ca.crt"},
		{"issuance failed", cert(failed), false, "", CertificateFailed, "no issuer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, msg := DecideCertificate(tt.cert, tt.found, tt.missing)
			if got != tt.want || !strings.Contains(msg, tt.msg) {
				t.Errorf("got %v %q, want %v containing %q", got, msg, tt.want, tt.msg)
			}
		})
	}
}

func TestMissingKey(t *testing.T) {
	s := &corev1.Secret{Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}}
	if got := missingKey(s); got != "ca.crt" {
		t.Errorf("missingKey = %q", got)
	}
	s.Data["ca.crt"] = []byte("ca")
	if got := missingKey(s); got != "" {
		t.Errorf("missingKey = %q", got)
	}
}

func TestStatefulSetRolledOut(t *testing.T) {
	sts := func(gen, observed int64, ready, updated int32, cur, upd string) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Generation: gen},
			Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: observed, ReadyReplicas: ready, UpdatedReplicas: updated,
				CurrentRevision: cur, UpdateRevision: upd},
		}
	}
	tests := []struct {
		name string
		sts  *appsv1.StatefulSet
		want bool
	}{
		{"all ready", sts(1, 1, 3, 3, "a", "a"), true},
		{"not observed", sts(2, 1, 3, 3, "a", "a"), false},
		{"two ready", sts(1, 1, 2, 3, "a", "a"), false},
		{"rolling", sts(1, 1, 3, 1, "a", "b"), false},
	}
	for _, tt := range tests {
		got, why := StatefulSetRolledOut(tt.sts, Southbound)
		if got != tt.want {
			t.Errorf("%s: got %v (%s)", tt.name, got, why)
		}
		if !got && !strings.Contains(why, "sb Raft members are ready") {
			t.Errorf("%s: message %q", tt.name, why)
		}
	}
}

func TestNewestFinishedBackup(t *testing.T) {
	at := func(name string, minutes int, cond batchv1.JobConditionType) batchv1.Job {
		j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(0, 0).Add(time.Duration(minutes) * time.Minute))}}
		if cond != "" {
			j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue}}
		}
		return j
	}
	tests := []struct {
		name string
		jobs []batchv1.Job
		want string
	}{
		{"none", nil, ""},
		{"only running", []batchv1.Job{at("a", 1, "")}, ""},
		{"a later success clears a failure", []batchv1.Job{at("a", 1, batchv1.JobFailed), at("b", 2, batchv1.JobComplete)}, "b"},
		{"a later failure shows", []batchv1.Job{at("a", 1, batchv1.JobComplete), at("b", 2, batchv1.JobFailed), at("c", 3, "")}, "b"},
	}
	for _, tt := range tests {
		got := NewestFinishedBackup(tt.jobs)
		name := ""
		if got != nil {
			name = got.Name
		}
		if name != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, name, tt.want)
		}
	}
}

func TestNamesFitTheirLimits(t *testing.T) {
	// The webhook caps a central's name at 45 characters; every child
	// name must still be a valid object name, and the CronJob's at most 52
	// so its Jobs' names fit.
	c := testCentral()
	c.Name = strings.Repeat("a", ovnv1alpha1.MaxOVNCentralNameLength)
	if n := len(BackupName(c)); n > 52 {
		t.Errorf("backup CronJob name has %d characters", n)
	}
	if n := len(Northbound.MemberName(c, 4)); n > 63 {
		t.Errorf("member Service name has %d characters", n)
	}
	if n := len(Northbound.ServerSecretName(c)); n > 63 {
		t.Errorf("certificate name has %d characters", n)
	}
	if n := len(selfSignedName(c)); n > 63 {
		t.Errorf("self-signed Issuer name has %d characters", n)
	}
}

// Without an issuer the central gets a root of its own, and every leaf
// comes from it; naming an issuer drops the root and sends every leaf
// there, the kind defaulting to ClusterIssuer.
func TestBuildOwnCA(t *testing.T) {
	tests := []struct {
		name     string
		ref      *ovnv1alpha1.IssuerReference
		ownCA    bool
		wantLeaf cmmeta.IssuerReference
	}{
		{name: "no issuer", ownCA: true,
			wantLeaf: cmmeta.IssuerReference{Name: "controlplane-ovn-ca", Kind: "Issuer", Group: "cert-manager.io"}},
		{name: "a ClusterIssuer by default", ref: &ovnv1alpha1.IssuerReference{Name: "anvil-ca"},
			wantLeaf: cmmeta.IssuerReference{Name: "anvil-ca", Kind: "ClusterIssuer", Group: "cert-manager.io"}},
		{name: "an Issuer", ref: &ovnv1alpha1.IssuerReference{Name: "ovn-ca", Kind: "Issuer"},
			wantLeaf: cmmeta.IssuerReference{Name: "ovn-ca", Kind: "Issuer", Group: "cert-manager.io"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testCentral()
			c.Spec.TLS.IssuerRef = tt.ref
			for _, cert := range BuildCertificates(c) {
				if cert.Spec.IssuerRef != tt.wantLeaf {
					t.Errorf("%s issuer = %+v, want %+v", cert.Name, cert.Spec.IssuerRef, tt.wantLeaf)
				}
			}
			selfSigned, ca, caIssuer := BuildOwnCA(c)
			if !tt.ownCA {
				if selfSigned != nil || ca != nil || caIssuer != nil {
					t.Errorf("a named issuer still builds a root: %v %v %v", selfSigned, ca, caIssuer)
				}
				return
			}
			if selfSigned.Name != "controlplane-ovn-selfsigned" || selfSigned.Spec.SelfSigned == nil || selfSigned.Namespace != "openstack" {
				t.Errorf("self-signed Issuer = %s/%s %+v", selfSigned.Namespace, selfSigned.Name, selfSigned.Spec)
			}
			if ca.Name != "controlplane-ovn-ca" || ca.Spec.SecretName != ca.Name || !ca.Spec.IsCA ||
				ca.Spec.IssuerRef.Name != selfSigned.Name || ca.Spec.IssuerRef.Kind != "Issuer" {
				t.Errorf("CA Certificate = %s %+v", ca.Name, ca.Spec)
			}
			// The renewed root keeps its key, so leaves signed before the
			// renewal still verify.
			if ca.Spec.PrivateKey.RotationPolicy != cmv1.RotationPolicyNever || ca.Spec.Duration.Duration < 365*24*time.Hour {
				t.Errorf("CA key policy %s, duration %v", ca.Spec.PrivateKey.RotationPolicy, ca.Spec.Duration)
			}
			if caIssuer.Name != tt.wantLeaf.Name || caIssuer.Spec.CA == nil || caIssuer.Spec.CA.SecretName != ca.Spec.SecretName {
				t.Errorf("CA Issuer = %s %+v", caIssuer.Name, caIssuer.Spec)
			}
			for _, obj := range ownCAObjects(c) {
				if obj.GetNamespace() != "openstack" || !slices.Contains([]string{selfSigned.Name, ca.Name}, obj.GetName()) {
					t.Errorf("a central that names an issuer would delete %s/%s", obj.GetNamespace(), obj.GetName())
				}
			}
		})
	}
}

func TestStatefulSetContract(t *testing.T) {
	c := testCentral()
	sts := BuildStatefulSet(c, Northbound, "h")
	env := map[string]string{}
	for _, e := range sts.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	for k, v := range map[string]string{"OVN_DB": "nb", "OVN_DB_PORT": "6641", "OVN_RAFT_PORT": "6643",
		"OVN_PEER_SERVICE": "controlplane-ovn-nb", "OVN_REPLICAS": "3", "OVN_ELECTION_TIMER_MS": "1000"} {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	if got := Northbound.MemberAddresses(c); !strings.HasPrefix(got, "ssl:controlplane-ovn-nb-0.controlplane-ovn-nb.openstack.svc.cluster.local:6641,") {
		t.Errorf("member addresses = %q", got)
	}
}

func TestBuildRelay(t *testing.T) {
	c := testCentral()
	c.Spec.Relay = &ovnv1alpha1.OVNRelaySpec{Replicas: ptr.To[int32](2)}
	svc := BuildRelayService(c)
	if svc.Name != "controlplane-ovn-sb-relay" || svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.Ports[0].Port != 6642 {
		t.Errorf("relay Service = %s %s %+v", svc.Name, svc.Spec.Type, svc.Spec.Ports)
	}
	c.Spec.Relay.ExternallyReachable = true
	if svc := BuildRelayService(c); svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.Ports[0].NodePort != 30661 {
		t.Errorf("external relay Service = %s %+v, want NodePort 30661", svc.Spec.Type, svc.Spec.Ports)
	}
	d := BuildRelay(c, "h")
	cmd := strings.Join(d.Spec.Template.Spec.Containers[0].Command, " ")
	if *d.Spec.Replicas != 2 || !strings.Contains(cmd, "relay:OVN_Southbound:ssl:controlplane-ovn-sb-0.") {
		t.Errorf("relay Deployment replicas %d, command %q", *d.Spec.Replicas, cmd)
	}
	if vol := d.Spec.Template.Spec.Volumes[0].Secret; vol == nil || vol.SecretName != "controlplane-ovn-sb-relay" {
		t.Errorf("the relay mounts %+v, want its own certificate", d.Spec.Template.Spec.Volumes[0])
	}
}

func TestBackupCronJob(t *testing.T) {
	c := testCentral()
	cj := BuildBackupCronJob(c, "h")
	if cj.Spec.Schedule != "0 2 * * *" || *cj.Spec.Suspend || cj.Spec.ConcurrencyPolicy != "Forbid" {
		t.Errorf("default CronJob = %q suspend %v %s", cj.Spec.Schedule, *cj.Spec.Suspend, cj.Spec.ConcurrencyPolicy)
	}
	env := map[string]string{}
	for _, e := range cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env["BACKUP_RETENTION_DAYS"] != "14" || !strings.HasPrefix(env["OVN_NB_DB"], "ssl:") {
		t.Errorf("backup env = %v", env)
	}
	c.Spec.Backup = &ovnv1alpha1.OVNBackupSpec{Schedule: "30 3 * * *", Suspend: true}
	if cj := BuildBackupCronJob(c, "h"); cj.Spec.Schedule != "30 3 * * *" || !*cj.Spec.Suspend {
		t.Errorf("CronJob = %q suspend %v", cj.Spec.Schedule, *cj.Spec.Suspend)
	}
}

// The Southbound's policy leaves the client port open to every source,
// Raft to the members, and the listener without a role to northd and the
// relay alone.
func TestBuildSouthboundPolicy(t *testing.T) {
	c := testCentral()
	p := BuildSouthboundPolicy(c)
	if p.Name != "controlplane-ovn-sb" || p.Spec.PodSelector.MatchLabels[componentLabel] != "sb" ||
		len(p.Spec.PolicyTypes) != 1 || p.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
		t.Fatalf("policy %s selects %v, types %v", p.Name, p.Spec.PodSelector.MatchLabels, p.Spec.PolicyTypes)
	}
	want := map[int32][]string{6642: nil, 6644: {"sb"}, 16642: {"northd", "sb-relay"}}
	if len(p.Spec.Ingress) != len(want) {
		t.Fatalf("%d ingress rules, want %d", len(p.Spec.Ingress), len(want))
	}
	for _, rule := range p.Spec.Ingress {
		port := rule.Ports[0].Port.IntVal
		var got []string
		for _, peer := range rule.From {
			if peer.PodSelector.MatchLabels[instanceLabel] != c.Name || peer.NamespaceSelector != nil || peer.IPBlock != nil {
				t.Errorf("port %d admits %+v, want this central's own pods", port, peer)
			}
			got = append(got, peer.PodSelector.MatchLabels[componentLabel])
		}
		if !slices.Equal(got, want[port]) {
			t.Errorf("port %d admits %v, want %v", port, got, want[port])
		}
	}
}
