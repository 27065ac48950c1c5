package podrunner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestLoopbackAddresses checks that own addresses are deterministic, stay
// in 127.0.0.0/8 outside 127.0.0.0/16, avoid .0 and .255, and that pods and
// nodes draw from disjoint second octets.
func TestLoopbackAddresses(t *testing.T) {
	if a, b := OwnPodAddress("openstack", "central-nb-0"), OwnPodAddress("openstack", "central-nb-0"); a != b {
		t.Fatalf("not deterministic: %s, %s", a, b)
	}
	if OwnPodAddress("openstack", "central-nb-0") == OwnPodAddress("openstack", "central-nb-1") {
		t.Error("two members share an address")
	}
	// The key separates namespace and name, so "a/b-c" and "a-b/c" differ.
	if OwnPodAddress("a", "b-c") == OwnPodAddress("a-b", "c") {
		t.Error("namespace and name run together")
	}
	seen := map[string]string{}
	for i := range 2000 {
		for _, tt := range []struct {
			addr     string
			min, max int
		}{
			{OwnPodAddress("ns", fmt.Sprintf("pod-%d", i)), 1, 127},
			{NodeEncapAddress(fmt.Sprintf("node-%d", i)), 128, 254},
		} {
			ip := net.ParseIP(tt.addr).To4()
			if ip == nil || ip[0] != 127 || int(ip[1]) < tt.min || int(ip[1]) > tt.max || ip[3] == 0 || ip[3] == 255 {
				t.Fatalf("address %s is outside 127.%d-%d.x.1-254", tt.addr, tt.min, tt.max)
			}
			seen[tt.addr] = tt.addr
		}
	}
	// 4000 draws from 8 million addresses: a collision would mean a broken
	// hash, not bad luck.
	if len(seen) < 3990 {
		t.Errorf("only %d distinct addresses from 4000 keys", len(seen))
	}
}

func TestMemberPod(t *testing.T) {
	tests := []struct {
		host          string
		wantNS, wantP string
		ok            bool
	}{
		{"c-nb-0.c-nb.openstack.svc.cluster.local", "openstack", "c-nb-0", true},
		{"c-nb-2.c-nb.openstack.svc", "openstack", "c-nb-2", true},
		{"C-NB-1.c-nb.OpenStack.svc.cluster.local.", "openstack", "c-nb-1", true},
		{"c-nb.openstack.svc.cluster.local", "", "", false}, // a Service, not a pod
		{"c-nb-0.c-nb.openstack.svc.example.org", "", "", false},
		{"10.0.0.12", "", "", false},
		{"..openstack.svc", "", "", false},
	}
	for _, tt := range tests {
		ns, pod, ok := memberPod(tt.host)
		if ns != tt.wantNS || pod != tt.wantP || ok != tt.ok {
			t.Errorf("memberPod(%q) = %q, %q, %v; want %q, %q, %v", tt.host, ns, pod, ok, tt.wantNS, tt.wantP, tt.ok)
		}
	}
}

func TestTranslateOVNAddresses(t *testing.T) {
	resolve := func(host string, port int) (string, int, error) {
		switch host {
		case "member":
			return "127.9.9.9", port, nil
		case "10.0.0.1":
			return "127.8.8.8", port + 1, nil
		case "fd00::1":
			return "::1", port, nil
		case "broken":
			return "", 0, errors.New("no such thing")
		}
		return host, port, nil
	}
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "ssl:member:6641", want: "ssl:127.9.9.9:6641"},
		{in: "ssl:member:6641, tcp:10.0.0.1:6642,unix:/run/ovn/db.sock", want: "ssl:127.9.9.9:6641,tcp:127.8.8.8:6643,unix:/run/ovn/db.sock"},
		{in: "ssl:[fd00::1]:6641", want: "ssl:[::1]:6641"},
		{in: "pssl:6641:10.0.0.1,ssl:127.0.0.1:30641", want: "pssl:6641:10.0.0.1,ssl:127.0.0.1:30641"},
		{in: "ssl:member", wantErr: `OVN address "ssl:member": address member: missing port in address`},
		{in: "ssl:member:x", wantErr: `OVN address "ssl:member:x": invalid port`},
		{in: "ssl:broken:1", wantErr: `OVN address "ssl:broken:1": no such thing`},
		{in: " , ", wantErr: `no address in " , "`},
	}
	for _, tt := range tests {
		got, err := translateOVNAddresses(tt.in, resolve)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%q: err = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// fakeCluster is a clusterSource over fixed objects.
type fakeCluster struct {
	services []corev1.Service
	pods     []corev1.Pod
}

func (f fakeCluster) Services(context.Context) ([]corev1.Service, error) { return f.services, nil }

func (f fakeCluster) Pods(_ context.Context, namespace string, selector map[string]string) ([]corev1.Pod, error) {
	var out []corev1.Pod
	for _, p := range f.pods {
		if p.Namespace == namespace && labels.SelectorFromSet(selector).Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out, nil
}

// memberService is a per-member Service as the central creates it.
func memberService(name, ip, member string, port int32, target intstr.IntOrString) corev1.Service {
	return corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openstack"},
		Spec: corev1.ServiceSpec{
			ClusterIP: ip, ClusterIPs: []string{ip},
			Selector: map[string]string{statefulSetPodNameLabel: member},
			Ports:    []corev1.ServicePort{{Port: port, TargetPort: target}},
		},
	}
}

func runningPod(name, ip string, lbls map[string]string, ports ...corev1.ContainerPort) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openstack", Labels: lbls},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: ports}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
	}
}

func TestResolverServices(t *testing.T) {
	c := fakeCluster{
		services: []corev1.Service{
			memberService("c-sb-0", "10.96.0.10", "c-sb-0", 6642, intstr.FromInt32(6642)),
			memberService("c-sb-1", "10.96.0.11", "c-sb-1", 6642, intstr.FromString("ovsdb")),
			// Its member is being recreated: no pod, yet an address.
			memberService("c-sb-2", "10.96.0.12", "c-sb-2", 6642, intstr.IntOrString{}),
			{
				ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "openstack"},
				Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.20", Selector: map[string]string{"app": "api"},
					Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(8443)}}},
			},
			{ObjectMeta: metav1.ObjectMeta{Name: "none", Namespace: "openstack"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.30", Ports: []corev1.ServicePort{{Port: 1}}}},
		},
		pods: []corev1.Pod{
			runningPod("c-sb-0", "127.20.0.1", map[string]string{statefulSetPodNameLabel: "c-sb-0"}),
			runningPod("c-sb-1", "127.20.0.2", map[string]string{statefulSetPodNameLabel: "c-sb-1"}, corev1.ContainerPort{Name: "ovsdb", ContainerPort: 16642}),
			runningPod("api-b", "127.0.0.1", map[string]string{"app": "api"}),
			runningPod("api-a", "127.0.0.1", map[string]string{"app": "api"}),
		},
	}
	r := resolver{ctx: context.Background(), src: c}
	tests := []struct {
		host     string
		port     int
		want     string
		wantErr  string
		noSource bool
	}{
		{host: "10.96.0.10", port: 6642, want: "127.20.0.1:6642"},
		{host: "10.96.0.11", port: 6642, want: "127.20.0.2:16642"},
		{host: "10.96.0.12", port: 6642, want: OwnPodAddress("openstack", "c-sb-2") + ":6642"},
		{host: "10.96.0.20", port: 443, want: "127.0.0.1:8443"},
		{host: "c-sb-1.c-sb.openstack.svc.cluster.local", port: 6644, want: OwnPodAddress("openstack", "c-sb-1") + ":6644"},
		{host: "192.0.2.7", port: 6642, want: "192.0.2.7:6642"}, // no Service: a real address
		{host: "127.0.0.1", port: 30642, want: "127.0.0.1:30642"},
		{host: "10.96.0.10", port: 6642, want: "10.96.0.10:6642", noSource: true},
		{host: "10.96.0.10", port: 9999, wantErr: "the Service openstack/c-sb-0 has no TCP port 9999"},
		{host: "10.96.0.30", port: 1, wantErr: "the Service openstack/none has no selector"},
	}
	for _, tt := range tests {
		rr := r
		if tt.noSource {
			rr.src = nil
		}
		host, port, err := rr.resolve(tt.host, tt.port)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s:%d: err = %v, want %q", tt.host, tt.port, err, tt.wantErr)
			}
			continue
		}
		if got := net.JoinHostPort(host, fmt.Sprint(port)); err != nil || got != tt.want {
			t.Errorf("%s:%d = %s, %v; want %s", tt.host, tt.port, got, err, tt.want)
		}
	}
}
