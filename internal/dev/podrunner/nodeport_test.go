package podrunner

import (
	"bufio"
	"context"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// nodePortService is a Service of type t selecting app=<app>.
func nodePortService(name, app string, t corev1.ServiceType, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:       corev1.ServiceSpec{Type: t, Selector: map[string]string{"app": app}, Ports: ports},
	}
}

func TestDesiredNodePorts(t *testing.T) {
	eps := []endpoint{
		{namespace: "ns", name: "db-0", ip: "127.40.0.1", labels: map[string]string{"app": "db"}},
		{namespace: "other", name: "web-0", ip: HostIP, labels: map[string]string{"app": "web"}},
	}
	svcs := []*corev1.Service{
		nodePortService("db", "db", corev1.ServiceTypeNodePort,
			corev1.ServicePort{Port: 6641, NodePort: 30641},
			corev1.ServicePort{Name: "udp", Port: 53, NodePort: 30053, Protocol: corev1.ProtocolUDP}),
		nodePortService("db-lb", "db", corev1.ServiceTypeLoadBalancer, corev1.ServicePort{Port: 6641, NodePort: 30642}),
		nodePortService("db-internal", "db", corev1.ServiceTypeClusterIP, corev1.ServicePort{Port: 6641}),
		// Selects pods of another runner (or none): not this runner's port.
		nodePortService("elsewhere", "cache", corev1.ServiceTypeNodePort, corev1.ServicePort{Port: 1, NodePort: 30001}),
		// The pod is in another namespace than the Service.
		nodePortService("web", "web", corev1.ServiceTypeNodePort, corev1.ServicePort{Port: 80, NodePort: 30080}),
	}
	got := desiredNodePorts(svcs, eps)
	want := map[int32]string{30641: "ns/db", 30642: "ns/db-lb"}
	if len(got) != len(want) || got[30641] != want[30641] || got[30642] != want[30642] {
		t.Errorf("desiredNodePorts = %v, want %v", got, want)
	}
}

// echoServer answers every line with "<name>: <line>" on addr.
func echoServer(t *testing.T, addr, name string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				s := bufio.NewScanner(c)
				for s.Scan() {
					_, _ = io.WriteString(c, name+": "+s.Text()+"\n")
				}
			}()
		}
	}()
}

// ask sends a line to addr and returns the answer, or the error.
func ask(addr, line string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	answer, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(answer), err
}

// TestNodePortForwarder runs the forwarder against a pod server on its own
// loopback address and follows the Service as it changes type and the pod
// as it goes.
func TestNodePortForwarder(t *testing.T) {
	podAddr := OwnPodAddress("ns", "db-0")
	target := freePort(t)
	echoServer(t, net.JoinHostPort(podAddr, strconv.Itoa(target)), "db-0")
	nodePort := int32(freePort(t))

	var mu sync.Mutex
	svc := nodePortService("db", "db", corev1.ServiceTypeNodePort,
		corev1.ServicePort{Port: 6641, NodePort: nodePort, TargetPort: intstr.FromString("ovsdb")})
	eps := []endpoint{{namespace: "ns", name: "db-0", ip: podAddr, labels: map[string]string{"app": "db"}, spec: &corev1.PodSpec{
		Containers: []corev1.Container{{Ports: []corev1.ContainerPort{{Name: "ovsdb", ContainerPort: int32(target)}}}},
	}}}
	f := newNodePortForwarder(logr.Discard(),
		func() []*corev1.Service { mu.Lock(); defer mu.Unlock(); return []*corev1.Service{svc.DeepCopy()} },
		func() []endpoint { mu.Lock(); defer mu.Unlock(); return append([]endpoint(nil), eps...) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.run(ctx, nil) }()
	defer func() { cancel(); <-done }()

	addr := net.JoinHostPort(HostIP, strconv.Itoa(int(nodePort)))
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: timed out", what)
			}
			f.trigger()
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("the node port answers", func() bool { a, err := ask(addr, "hello"); return err == nil && a == "db-0: hello" })

	// The user turns externallyReachable off: the Service becomes
	// ClusterIP, and the port closes.
	mu.Lock()
	svc.Spec.Type = corev1.ServiceTypeClusterIP
	mu.Unlock()
	waitFor("the node port closes", func() bool { _, err := net.DialTimeout("tcp", addr, time.Second); return err != nil })

	// And on again.
	mu.Lock()
	svc.Spec.Type = corev1.ServiceTypeNodePort
	mu.Unlock()
	waitFor("the node port opens again", func() bool { a, err := ask(addr, "again"); return err == nil && a == "db-0: again" })

	// The pod leaves the runner: no pod of this runner, no port.
	mu.Lock()
	eps = nil
	mu.Unlock()
	waitFor("the port closes without a pod", func() bool { _, err := net.DialTimeout("tcp", addr, time.Second); return err != nil })
}

// TestHandlerGivesOwnAddress checks that a pod whose mapping asks for an
// address of its own reports it, hands it to the mapping and to the
// downward API, and that other pods keep the host's.
func TestHandlerGivesOwnAddress(t *testing.T) {
	f := newHandlerFixture(t)
	own := shellMapping()
	own.Name, own.OwnAddress = "own", true
	own.Match = func(c *corev1.Container) bool { return c.Name == "own" }
	var seen string
	build := own.Build
	own.Build = func(c Container) (Command, error) { seen = c.PodIP; return build(c) }
	f.h.images = append(ImageMap{own}, f.h.images...)

	c := shell("own", `echo "$POD_IP" > ip.txt; sleep 30`)
	c.Env = []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
	pod := testPod("member-0", corev1.RestartPolicyAlways, c)
	if err := f.h.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	want := OwnPodAddress("ns", "member-0")
	got := f.waitPod(t, "member-0", phaseIs(corev1.PodRunning))
	if got.Status.PodIP != want || len(got.Status.PodIPs) != 1 || got.Status.PodIPs[0].IP != want || got.Status.HostIP != HostIP {
		t.Errorf("status: podIP %s %v, hostIP %s; want podIP %s", got.Status.PodIP, got.Status.PodIPs, got.Status.HostIP, want)
	}
	if seen != want {
		t.Errorf("the mapping saw PodIP %q, want %q", seen, want)
	}
	ipFile := filepath.Join(f.h.podDir(pod), containersDirName, "own", "ip.txt")
	if env := strings.TrimSpace(waitForFile(t, ipFile)); env != want {
		t.Errorf("status.podIP in the env = %q, want %q", env, want)
	}
	eps := f.h.endpoints()
	if len(eps) != 1 || eps[0].ip != want || eps[0].name != "member-0" {
		t.Errorf("endpoints = %+v", eps)
	}

	// On the host network the pod keeps the host's address.
	hostPod := testPod("member-1", corev1.RestartPolicyAlways, shell("own", "sleep 30"))
	hostPod.Spec.HostNetwork = true
	if err := f.h.CreatePod(context.Background(), hostPod); err != nil {
		t.Fatal(err)
	}
	if got := f.waitPod(t, "member-1", phaseIs(corev1.PodRunning)); got.Status.PodIP != HostIP {
		t.Errorf("host-network pod IP = %s", got.Status.PodIP)
	}
}
