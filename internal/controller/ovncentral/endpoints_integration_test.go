package ovncentral_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/dev/ovntest"
)

// dbCase is one database as the endpoints tests see it.
type dbCase struct {
	short  string
	schema string
	port   int32
	base   int32
	status func(*ovnv1alpha1.OVNCentral) *ovnv1alpha1.OVNDatabaseStatus
}

// The endpoints rule (docs/reference/ovncentral.md, Status and
// EndpointsReady): each database's internalDbAddress is ssl:<cluster IP>:
// <client port> of every member's own Service in ordinal order, read live,
// so a member Service that is recreated under a new cluster IP is
// published under the new one; every Service publishes the client port,
// and the Southbound's listener without a role (16642) only the headless
// one. Then externallyReachable, on: each member's Service becomes a
// NodePort at nodePortBase+i, dbAddress lists ssl:<node IP>:<nodePortBase+i>
// in ordinal order, and clients reach both clusters through it; and off
// again: the Services are ClusterIPs without node ports, dbAddress is
// cleared, the node ports stop answering and the internal addresses stay.
func TestIntegrationCentralEndpoints(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	ctx := context.Background()
	c := newCentral(t, "ocedge", 3, 31801, 31811)
	c = waitReady(t, c.Name, 6*time.Minute)
	dbs := []dbCase{
		{"nb", "OVN_Northbound", 6641, 31801, func(c *ovnv1alpha1.OVNCentral) *ovnv1alpha1.OVNDatabaseStatus { return &c.Status.Northbound }},
		{"sb", "OVN_Southbound", 6642, 31811, func(c *ovnv1alpha1.OVNCentral) *ovnv1alpha1.OVNDatabaseStatus { return &c.Status.Southbound }},
	}

	t.Run("EndpointsRule", func(t *testing.T) {
		for _, db := range dbs {
			svcs := memberServices(t, c.Name, db, false)
			if got, want := db.status(c).InternalDBAddress, internalAddresses(svcs, db.port); got != want {
				t.Errorf("%s internalDbAddress = %q, want the member Services' %q", db.short, got, want)
			}
			if db.status(c).DBAddress != "" {
				t.Errorf("%s dbAddress = %q while not externally reachable", db.short, db.status(c).DBAddress)
			}
			headless := &corev1.Service{}
			if err := e.Management.Client.Get(ctx, workloadKey(c.Name+"-"+db.short), headless); err != nil {
				t.Fatal(err)
			}
			ports := servicePorts(headless)
			wantPorts := []int32{db.port, db.port + 2}
			if db.short == "sb" {
				wantPorts = append(wantPorts, 16642)
			}
			if headless.Spec.ClusterIP != corev1.ClusterIPNone || !slices.Equal(ports, wantPorts) {
				t.Errorf("headless Service %s: cluster IP %q, ports %v; want None and %v", headless.Name, headless.Spec.ClusterIP, ports, wantPorts)
			}
		}

		// A member Service deleted behind the controller's back comes back,
		// under a new cluster IP, and the address follows it.
		sb := dbs[1]
		old := memberServices(t, c.Name, sb, false)[1]
		if err := e.Management.Client.Delete(ctx, old); err != nil {
			t.Fatal(err)
		}
		ovntest.Eventually(t, 2*time.Minute, "the central publishes the recreated Service's cluster IP", func() error {
			now := &corev1.Service{}
			if err := e.Management.Client.Get(ctx, client.ObjectKeyFromObject(old), now); err != nil {
				return err
			}
			if now.UID == old.UID {
				return errorf("Service %s not recreated yet", old.Name)
			}
			got := &ovnv1alpha1.OVNCentral{}
			if err := e.Management.Client.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
				return err
			}
			want := internalAddresses(memberServices(t, c.Name, sb, false), sb.port)
			if got.Status.Southbound.InternalDBAddress != want {
				return errorf("southbound internalDbAddress = %q, want %q (the old Service had %s, the new one %s)",
					got.Status.Southbound.InternalDBAddress, want, old.Spec.ClusterIP, now.Spec.ClusterIP)
			}
			return nil
		})
		c = waitReady(t, c.Name, 2*time.Minute)
	})

	t.Run("ExternallyReachableOnAndOff", func(t *testing.T) {
		internal := []string{c.Status.Northbound.InternalDBAddress, c.Status.Southbound.InternalDBAddress}
		statesSince := recordStates(t, c)
		setExternallyReachable(t, c, true)
		c = waitReady(t, c.Name, 3*time.Minute)
		for i, db := range dbs {
			svcs := memberServices(t, c.Name, db, true)
			pods := memberPods(t, c.Name, db.short)
			var want []string
			for m, p := range pods {
				want = append(want, "ssl:"+p.Status.HostIP+":"+strconv.Itoa(int(db.base)+m))
			}
			if got := db.status(c).DBAddress; got != strings.Join(want, ",") {
				t.Errorf("%s dbAddress = %q, want %q", db.short, got, strings.Join(want, ","))
			}
			if got := db.status(c).InternalDBAddress; got != internal[i] || got != internalAddresses(svcs, db.port) {
				t.Errorf("%s internalDbAddress = %q, want it unchanged at %q", db.short, got, internal[i])
			}
		}
		tls := clientTLS(t, c.Status.ClientSecretName)
		for _, db := range dbs {
			ovntest.Eventually(t, 2*time.Minute, db.schema+" answers through its node ports", func() error {
				return oneCluster(t, tls, strings.Split(db.status(c).DBAddress, ","), db.schema)
			})
		}
		nb := append([]string{"--db=" + c.Status.Northbound.DBAddress, "--timeout=30"}, tls...)
		if _, err := ovntest.OVS(t, "ovn-nbctl", append(nb, "ls-add", "sw-outside")...); err != nil {
			t.Fatal(err)
		}
		sbArgs := append([]string{"--db=" + c.Status.Southbound.DBAddress, "--timeout=30", "--no-leader-only"}, tls...)
		ovntest.Eventually(t, 2*time.Minute, "the southbound answers through its node ports with northd's datapath", func() error {
			out, err := ovntest.OVS(t, "ovn-sbctl", append(sbArgs, "--bare", "--columns=external_ids", "list", "Datapath_Binding")...)
			if err != nil {
				return err
			}
			if !strings.Contains(out, "name=sw-outside") {
				return errorf("no datapath for sw-outside: %q", out)
			}
			return nil
		})
		external := []string{c.Status.Northbound.DBAddress, c.Status.Southbound.DBAddress}

		// The way back.
		setExternallyReachable(t, c, false)
		c = waitReady(t, c.Name, 3*time.Minute)
		for i, db := range dbs {
			memberServices(t, c.Name, db, false)
			if got := db.status(c).DBAddress; got != "" {
				t.Errorf("%s dbAddress = %q after externallyReachable was turned off, want none", db.short, got)
			}
			if got := db.status(c).InternalDBAddress; got != internal[i] {
				t.Errorf("%s internalDbAddress = %q, want it unchanged at %q", db.short, got, internal[i])
			}
		}
		for _, list := range external {
			for _, a := range strings.Split(list, ",") {
				ovntest.Eventually(t, time.Minute, a+" stops answering", func() error {
					if _, err := ovntest.OVS(t, "ovsdb-client", append(append([]string{}, tls...), "--timeout=5", "list-dbs", a)...); err == nil {
						return errorf("%s still answers", a)
					}
					return nil
				})
			}
		}
		pods := memberPods(t, c.Name, "nb")
		if err := oneCluster(t, tls, podAddresses(pods, 6641), "OVN_Northbound"); err != nil {
			t.Errorf("the northbound after the way back: %v", err)
		}

		// Both databases' addresses are published together or not at all:
		// no state the central went through on the way there and back
		// held a partial list, or one database's addresses without the
		// other's.
		states := statesSince(c)
		published := 0
		for _, s := range states {
			nbInt, sbInt := s.Status.Northbound.InternalDBAddress, s.Status.Southbound.InternalDBAddress
			nbExt, sbExt := s.Status.Northbound.DBAddress, s.Status.Southbound.DBAddress
			if count(nbInt) != count(sbInt) || count(nbInt)%3 != 0 || count(nbExt) != count(sbExt) || count(nbExt)%3 != 0 {
				t.Errorf("generation %d (resource version %s) published a partial set: nb %q / %q, sb %q / %q",
					s.Generation, s.ResourceVersion, nbInt, nbExt, sbInt, sbExt)
			}
			if nbExt != "" {
				published++
			}
		}
		if published == 0 {
			t.Errorf("none of the %d states the watch saw published the node addresses", len(states))
		}
	})
}

// setExternallyReachable turns both databases' externallyReachable on or
// off.
func setExternallyReachable(t *testing.T, c *ovnv1alpha1.OVNCentral, on bool) {
	t.Helper()
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Northbound.ExternallyReachable, c.Spec.Southbound.ExternallyReachable = on, on
	if err := env.Management.Client.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}
}

// memberServices returns the members' own Services of one database in
// ordinal order and checks their shape: one port, the client port, aimed
// at the member's pod alone; a NodePort at nodePortBase+i when external,
// a ClusterIP without node port when not.
func memberServices(t *testing.T, central string, db dbCase, external bool) []*corev1.Service {
	t.Helper()
	var out []*corev1.Service
	for i := range 3 {
		name := central + "-" + db.short + "-" + strconv.Itoa(i)
		s := &corev1.Service{}
		if err := env.Management.Client.Get(context.Background(), workloadKey(name), s); err != nil {
			t.Fatal(err)
		}
		wantType, wantNodePort := corev1.ServiceTypeClusterIP, int32(0)
		if external {
			wantType, wantNodePort = corev1.ServiceTypeNodePort, db.base+int32(i)
		}
		p := s.Spec.Ports
		switch {
		case s.Spec.Type != wantType:
			t.Errorf("Service %s is a %s, want %s", name, s.Spec.Type, wantType)
		case len(p) != 1 || p[0].Port != db.port || p[0].TargetPort.IntValue() != int(db.port) || p[0].NodePort != wantNodePort:
			t.Errorf("Service %s ports = %+v, want only %d to %d with node port %d", name, p, db.port, db.port, wantNodePort)
		case len(s.Spec.Selector) != 1 || s.Spec.Selector["statefulset.kubernetes.io/pod-name"] != name:
			t.Errorf("Service %s selects %v, want its member's pod alone", name, s.Spec.Selector)
		case s.Spec.ClusterIP == "" || s.Spec.ClusterIP == corev1.ClusterIPNone:
			t.Errorf("Service %s has cluster IP %q", name, s.Spec.ClusterIP)
		}
		out = append(out, s)
	}
	return out
}

// internalAddresses is what internalDbAddress must be for these Services.
func internalAddresses(svcs []*corev1.Service, port int32) string {
	out := make([]string, 0, len(svcs))
	for _, s := range svcs {
		out = append(out, "ssl:"+s.Spec.ClusterIP+":"+strconv.Itoa(int(port)))
	}
	return strings.Join(out, ",")
}

// servicePorts are a Service's ports, in its order.
func servicePorts(s *corev1.Service) []int32 {
	out := make([]int32, 0, len(s.Spec.Ports))
	for _, p := range s.Spec.Ports {
		out = append(out, p.Port)
	}
	return out
}

// count is how many addresses a comma-joined list holds.
func count(list string) int {
	if list == "" {
		return 0
	}
	return len(strings.Split(list, ","))
}
