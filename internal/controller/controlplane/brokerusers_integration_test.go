package controlplane_test

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/openstacktest"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/novaconfig"
)

// With remoteCompute.brokerAdminSecretRef, each compute cluster's mirror
// logs in to the real broker as a user of its own; revoking one cluster
// renews only its broker password; a same-named broker user Anvil did not
// create is neither taken nor changed; a cluster's user goes with its last
// pool, every one goes when the reference is removed and when the
// ControlPlane is deleted.
func TestIntegrationPerClusterBrokerUsers(t *testing.T) {
	e := startOperator(t)
	openstacktest.Require(t, cloud)
	ctx := context.Background()
	const name = "bk"
	local := cloud.Local()
	admin := cloud.AdminCredentials()
	putSecret(t, name+"-keystone-admin", map[string]string{"password": admin.Password, "username": admin.Username, "project_name": admin.ProjectName})
	brokerAdmin, err := local.BrokerAdmin()
	if err != nil {
		t.Fatal(err)
	}
	putSecret(t, name+"-broker-admin", stringMap(brokerAdmin))
	cp := buildControlPlane(t, name, true)
	// The suite's made-up remote URL names a vhost the set's broker lacks;
	// the mirrors here carry the set's own, which no pod of the suite dials.
	shared, err := cloud.TransportURL(true)
	if err != nil {
		t.Fatal(err)
	}
	putSecret(t, name+"-remote-transport", map[string]string{"transport_url": shared})
	ks := cp.Spec.Services.Keystone
	ks.InternalEndpoint, ks.PublicEndpoint = cloud.Endpoints[localcloud.KeystoneURL], cloud.Endpoints[localcloud.KeystonePublicURL]
	ks.AdminCredentialsSecretRef = &anvilmeta.LocalObjectReference{Name: name + "-keystone-admin"}
	rc := cp.Spec.Services.Nova.RemoteCompute
	rc.Credentials = c5c3v1alpha1.PerClusterCredentials
	rc.BrokerAdminSecretRef = &anvilmeta.LocalObjectReference{Name: name + "-broker-admin"}
	if err := e.Management.Client.Create(ctx, cp); err != nil {
		t.Fatal(err)
	}
	newPool(t, name, name+"-a", "compute-a")
	poolB := newPool(t, name, name+"-b", "compute-b")
	waitNovaReady(t, name, c5c3v1alpha1.NovaReadyReason)

	mirror := name + "-nova-compute-config"
	userA, pwA := waitBrokerLogin(t, "compute-a", mirror, "")
	userB, pwB := waitBrokerLogin(t, "compute-b", mirror, "")
	if userA != "nova-compute-compute-a" || userB != "nova-compute-compute-b" || pwA == pwB {
		t.Fatalf("the mirrors log in to the broker as %s and %s, with the same password %v", userA, userB, pwA == pwB)
	}
	leaks := []string{string(brokerAdmin["password"]), pwA, pwB, shared}
	waitBrokerUsers(t, name, "compute-a", "compute-b")
	b := mustRemote(t, "compute-b", mirror)

	// Revoking compute-a renews its broker password alone.
	patchControlPlane(t, name, func(cp *c5c3v1alpha1.ControlPlane) {
		cp.Annotations = map[string]string{c5c3v1alpha1.ReissueComputeCredentialsAnnotation: "compute-a@1"}
	})
	_, newA := waitBrokerLogin(t, "compute-a", mirror, pwA)
	leaks = append(leaks, newA)
	if openstacktest.BrokerLogin(ctx, local, userA, pwA) {
		t.Error("compute-a's old broker password still logs in")
	}
	if after := mustRemote(t, "compute-b", mirror); after.ResourceVersion != b.ResourceVersion {
		t.Error("revoking compute-a rewrote compute-b's mirror")
	}

	assertForeignBrokerUserKept(t, name)

	// compute-b's last pool leaving takes its broker user.
	if err := e.Management.Client.Delete(ctx, poolB); err != nil {
		t.Fatal(err)
	}
	waitNoBrokerUser(t, userB)
	waitBrokerUsers(t, name, "compute-a")

	// Removing the reference takes compute-a's broker user, and its mirror
	// logs in as the transport URL's user again.
	patchControlPlane(t, name, func(cp *c5c3v1alpha1.ControlPlane) { cp.Spec.Services.Nova.RemoteCompute.BrokerAdminSecretRef = nil })
	waitNoBrokerUser(t, userA)
	waitBrokerUsers(t, name)
	sharedUser := mustParseUser(t, shared)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		s, err := remoteSecret(t, "compute-a", mirror)
		return err == nil && mirrorBrokerUser(t, s) == sharedUser, nil
	}); err != nil {
		t.Fatal("compute-a's mirror never went back to the transport URL's user")
	}

	// Set again, and the ControlPlane deleted: the user goes with it.
	patchControlPlane(t, name, func(cp *c5c3v1alpha1.ControlPlane) {
		cp.Spec.Services.Nova.RemoteCompute.BrokerAdminSecretRef = &anvilmeta.LocalObjectReference{Name: name + "-broker-admin"}
	})
	_, again := waitBrokerLogin(t, "compute-a", mirror, "")
	leaks = append(leaks, again)
	if err := e.Management.Client.Delete(ctx, cp); err != nil {
		t.Fatal(err)
	}
	waitNoBrokerUser(t, userA)
	waitGone(t, func() error {
		return e.Management.Client.Get(ctx, client.ObjectKeyFromObject(cp), &c5c3v1alpha1.ControlPlane{})
	})
	assertNoLeak(t)
	texts := append([]string{logs.String()}, e.Management.EventMessages(t)...)
	testenv.AssertNoLeak(t, texts, leaks)
}

// assertForeignBrokerUserKept plants compute-c's broker user by hand: a
// pool there is refused with BrokerUserError, the user keeps its password,
// and it stays when the pool leaves.
func assertForeignBrokerUserKept(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	const foreign, password = "nova-compute-compute-c", "a-broker-password-somebody-chose"
	cl, _ := cloud.ForTest(t)
	cl.BusUser(cloud.Local(), foreign, password)
	poolC := newPool(t, name, name+"-c", "compute-c")
	cond := waitNovaReady(t, name, c5c3v1alpha1.BrokerUserErrorReason)
	if !strings.Contains(cond.Message, "compute-c") || !strings.Contains(cond.Message, "is not this ControlPlane's") {
		t.Errorf("NovaReady does not name the foreign user's cluster: %s", cond.Message)
	}
	if !openstacktest.BrokerLogin(ctx, cloud.Local(), foreign, password) {
		t.Error("the foreign broker user's password was changed")
	}
	if err := env.Management.Client.Delete(ctx, poolC); err != nil {
		t.Fatal(err)
	}
	waitNovaReady(t, name, c5c3v1alpha1.NovaReadyReason)
	if found, err := openstacktest.BrokerUserExists(ctx, cloud.Local(), foreign); err != nil || !found {
		t.Errorf("the foreign broker user was deleted (found %v, %v)", found, err)
	}
}

// waitBrokerLogin waits until a cluster's mirror carries a broker password
// other than old and returns the user and password it logs in with, after
// checking that the broker accepts them.
func waitBrokerLogin(t *testing.T, cluster, mirror, old string) (user, password string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		s, err := remoteSecret(t, cluster, mirror)
		if err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		u := mirrorURL(t, s)
		if u.User == nil || !strings.HasPrefix(u.User.Username(), "nova-compute-") {
			return false, nil
		}
		user = u.User.Username()
		password, _ = u.User.Password()
		return password != old && password == string(s.Data["password"]), nil
	})
	if err != nil {
		t.Fatalf("the mirror on %s never carried a broker user of its own", cluster)
	}
	if !openstacktest.BrokerLogin(context.Background(), cloud.Local(), user, password) {
		t.Fatalf("the broker refuses %s with the password of the mirror on %s", user, cluster)
	}
	return user, password
}

// waitBrokerUsers waits until status.brokerUsers lists exactly clusters.
func waitBrokerUsers(t *testing.T, name string, clusters ...string) {
	t.Helper()
	var got []string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cp := &c5c3v1alpha1.ControlPlane{}
		if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, cp); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		got = nil
		for _, u := range cp.Status.BrokerUsers {
			got = append(got, u.Cluster)
		}
		return slices.Equal(got, clusters), nil
	})
	if err != nil {
		t.Fatalf("status.brokerUsers lists %v, want %v", got, clusters)
	}
}

// waitNoBrokerUser waits until the set's broker has no user of that name.
func waitNoBrokerUser(t *testing.T, user string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		found, err := openstacktest.BrokerUserExists(ctx, cloud.Local(), user)
		return err == nil && !found, nil
	})
	if err != nil {
		t.Fatalf("the broker user %s was never deleted", user)
	}
}

// mirrorURL parses the transport URL a mirror hands nova-compute; the
// suite's URLs list one host, which net/url reads.
func mirrorURL(t *testing.T, s *corev1.Secret) *url.URL {
	t.Helper()
	u, err := url.Parse(novaconfig.FromEnvLiteral(string(s.Data[novaconfig.KeyTransportURL])))
	if err != nil {
		// url.Error quotes the URL, which holds a password.
		t.Fatal("a mirror's transport URL does not parse")
	}
	return u
}

// mirrorBrokerUser is the user a mirror's transport URL logs in as.
func mirrorBrokerUser(t *testing.T, s *corev1.Secret) string {
	t.Helper()
	if u := mirrorURL(t, s); u.User != nil {
		return u.User.Username()
	}
	return ""
}

// mustParseUser is the user of a single-host transport URL.
func mustParseUser(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		// url.Error quotes the URL, which holds a password.
		t.Fatal("the set's transport URL names no user")
	}
	return u.User.Username()
}

func stringMap(data map[string][]byte) map[string]string {
	out := make(map[string]string, len(data))
	for k, v := range data {
		out[k] = string(v)
	}
	return out
}
