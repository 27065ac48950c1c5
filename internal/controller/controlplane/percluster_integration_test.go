package controlplane_test

import (
	"bytes"
	"context"
	"maps"
	"os"
	"regexp"
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
	"github.com/anvil/anvil/internal/openstack"
)

// fragmentUser reads the user the fragment's client sections name.
var fragmentUser = regexp.MustCompile(`(?m)^\[service_user\]\n(?:.*\n)*?username = (.*)$`)

// mirrorCredentials turns a per-cluster mirror into the credentials its
// nova-compute authenticates with, at the real public Keystone.
func mirrorCredentials(t *testing.T, s *corev1.Secret) openstack.Credentials {
	t.Helper()
	m := fragmentUser.FindSubmatch(s.Data["nova-compute.conf"])
	if m == nil {
		t.Fatalf("the mirror's fragment names no [service_user] user")
	}
	ca, err := os.ReadFile(cloud.Endpoints[localcloud.KeystoneCA])
	if err != nil {
		t.Fatal(err)
	}
	return openstack.Credentials{AuthURL: cloud.Endpoints[localcloud.KeystonePublicURL], Username: string(m[1]),
		Password: string(s.Data["password"]), ProjectName: "service", UserDomainName: "Default", ProjectDomainName: "Default", CABundle: ca}
}

// With PerCluster, each compute cluster's mirror, and its copy of the
// hypervisor operator's auth Secret, authenticate as Keystone users of its
// own; revoking one cluster's credentials leaves the other's copies byte
// for byte as they were; withdrawing a cluster's auth copy deletes its
// hypervisor operator user; the last pool leaving a cluster deletes its
// users.
func TestIntegrationPerClusterCredentials(t *testing.T) {
	e := startOperator(t)
	openstacktest.Require(t, cloud)
	ctx := context.Background()
	const name = "pc"
	removeLeftoverAccount(t)
	admin := cloud.AdminCredentials()
	putSecret(t, name+"-keystone-admin", map[string]string{"password": admin.Password, "username": admin.Username, "project_name": admin.ProjectName})
	// The nova service user's password stays the suite's made-up one: the
	// pools here must never reach Nova, whose aggregates other packages'
	// tests own. Only the account work talks to Keystone, as the admin.
	cp := buildControlPlane(t, name, true)
	ks := cp.Spec.Services.Keystone
	ks.InternalEndpoint, ks.PublicEndpoint = cloud.Endpoints[localcloud.KeystoneURL], cloud.Endpoints[localcloud.KeystonePublicURL]
	ks.AdminCredentialsSecretRef = &anvilmeta.LocalObjectReference{Name: name + "-keystone-admin"}
	cp.Spec.Services.Nova.RemoteCompute.Credentials = c5c3v1alpha1.PerClusterCredentials
	cp.Spec.Services.Nova.HypervisorOperator = &c5c3v1alpha1.HypervisorOperatorSpec{}
	// compute-b's password is planted beforehand with Anvil's ownership
	// labels; Anvil must not set it on compute-b's user.
	const planted = "a-cluster-password-somebody-else-chose"
	credsNameB := name + "-nova-compute-credentials-compute-b"
	plantOwnedSecret(t, credsNameB, name, "password", planted)
	// nova holds a role here that nova-compute does not need; the
	// clusters' own users must not get it.
	project := openServiceProject(t)
	project.grant(t, "nova", "reader", true)
	if err := e.Management.Client.Create(ctx, cp); err != nil {
		t.Fatal(err)
	}
	newPool(t, name, name+"-a", "compute-a")
	poolB := newPool(t, name, name+"-b", "compute-b")
	waitNovaReady(t, name, c5c3v1alpha1.NovaReadyReason)
	assertPlantedReplaced(t, credsNameB, "password", planted)

	mirror := name + "-nova-compute-config"
	a, b := mustRemote(t, "compute-a", mirror), mustRemote(t, "compute-b", mirror)
	credsA, credsB := mirrorCredentials(t, a), mirrorCredentials(t, b)
	if credsA.Username != "nova-compute-compute-a" || credsB.Username != "nova-compute-compute-b" || credsA.Password == credsB.Password {
		t.Fatalf("mirrors authenticate as %s and %s, with the same password %v", credsA.Username, credsB.Username, credsA.Password == credsB.Password)
	}
	if credsB.Password == planted {
		t.Fatal("compute-b's mirror carries the planted password")
	}
	assertGeneratedRecorded(t, name, credsNameB, credsB.Password)
	for _, c := range []openstack.Credentials{credsA, credsB} {
		if _, err := openstack.NewIdentitySession(ctx, c); err != nil {
			t.Errorf("%s cannot log in with its mirror: %v", c.Username, err)
		}
		project.waitComputeRoles(t, c.Username)
	}
	// A role granted beyond those is taken back by a later pass (the
	// reissue below starts one).
	project.grant(t, credsA.Username, "member", false)
	leaks := []string{admin.Password, credsA.Password, credsB.Password}
	authName := name + "-nova-hypervisor-operator-auth"
	authA, authB := assertOwnHypervisorOperator(t, "compute-a", authName), assertOwnHypervisorOperator(t, "compute-b", authName)
	if authA.Password == authB.Password {
		t.Error("both clusters' hypervisor operator users have the same password")
	}
	leaks = append(leaks, authA.Password, authB.Password, string(localSecret(t, authName).Data["password"]))
	authCopyB := mustRemote(t, "compute-b", authName)

	// Revoke compute-a alone.
	patchControlPlane(t, name, func(cp *c5c3v1alpha1.ControlPlane) {
		cp.Annotations = map[string]string{c5c3v1alpha1.ReissueComputeCredentialsAnnotation: "compute-a@1"}
	})
	var reissued *corev1.Secret
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		s, err := remoteSecret(t, "compute-a", mirror)
		reissued = s
		return err == nil && string(s.Data["password"]) != credsA.Password, nil
	})
	if err != nil {
		t.Fatal("compute-a's mirror never got new credentials")
	}
	newA := mirrorCredentials(t, reissued)
	leaks = append(leaks, newA.Password)
	if _, err := openstack.NewIdentitySession(ctx, credsA); err == nil {
		t.Error("compute-a's old password still logs in")
	}
	if _, err := openstack.NewIdentitySession(ctx, newA); err != nil {
		t.Errorf("compute-a's new password does not log in: %v", err)
	}
	project.waitComputeRoles(t, newA.Username)
	if after := mustRemote(t, "compute-b", mirror); after.ResourceVersion != b.ResourceVersion || !maps.EqualFunc(after.Data, b.Data, bytes.Equal) {
		t.Error("revoking compute-a rewrote compute-b's mirror")
	}
	// The same request renews compute-a's hypervisor operator user.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		s, err := remoteSecret(t, "compute-a", authName)
		return err == nil && string(s.Data["password"]) != authA.Password, nil
	})
	if err != nil {
		t.Fatal("compute-a's auth copy never got a new password")
	}
	newAuthA := assertOwnHypervisorOperator(t, "compute-a", authName)
	leaks = append(leaks, newAuthA.Password)
	if _, err := openstack.NewIdentitySession(ctx, authA); err == nil {
		t.Error("compute-a's old hypervisor operator password still logs in")
	}
	if after := mustRemote(t, "compute-b", authName); after.ResourceVersion != authCopyB.ResourceVersion {
		t.Error("revoking compute-a rewrote compute-b's auth copy")
	}

	// Withdrawing compute-a's copy deletes its user; granting it again
	// issues one that logs in.
	setAuthOptIn(t, false)
	t.Cleanup(func() { setAuthOptIn(t, true) })
	waitNoUser(t, "hypervisor-operator-compute-a")
	waitGone(t, func() error { _, err := remoteSecret(t, "compute-a", authName); return err })
	setAuthOptIn(t, true)
	leaks = append(leaks, assertOwnHypervisorOperator(t, "compute-a", authName).Password)

	// The last pool leaving compute-b takes its user.
	if err := e.Management.Client.Delete(ctx, poolB); err != nil {
		t.Fatal(err)
	}
	waitNoUser(t, "nova-compute-compute-b")
	waitNoUser(t, "hypervisor-operator-compute-b")
	waitGone(t, func() error {
		return e.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name + "-nova-hypervisor-operator-credentials-compute-b"}, &corev1.Secret{})
	})
	waitGone(t, func() error {
		return e.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: credsNameB}, &corev1.Secret{})
	})
	waitForgotten(t, name, credsNameB)

	// Deleting the ControlPlane takes the remaining user.
	if err := e.Management.Client.Delete(ctx, cp); err != nil {
		t.Fatal(err)
	}
	waitNoUser(t, "nova-compute-compute-a")
	waitNoUser(t, "hypervisor-operator-compute-a")
	assertAccountRole(t, false)
	testenv.AssertNoLeak(t, append([]string{logs.String()}, e.Management.EventMessages(t)...), leaks)
}

// assertOwnHypervisorOperator waits for a cluster's auth copy to name the
// cluster's own user, and checks that it logs in; it returns the copy's
// credentials.
func assertOwnHypervisorOperator(t *testing.T, cluster, authName string) openstack.Credentials {
	t.Helper()
	want := "hypervisor-operator-" + cluster
	var copied *corev1.Secret
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		s, err := remoteSecret(t, cluster, authName)
		copied = s
		return err == nil && string(s.Data["username"]) == want, nil
	})
	if err != nil {
		t.Fatalf("the auth copy on %s never named %s", cluster, want)
	}
	creds := authCredentials(t, copied)
	if _, err := openstack.NewIdentitySession(context.Background(), creds); err != nil {
		t.Errorf("%s cannot log in with the copy on %s: %v", want, cluster, err)
	}
	return creds
}

func mustRemote(t *testing.T, cluster, name string) *corev1.Secret {
	t.Helper()
	var got *corev1.Secret
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		s, err := remoteSecret(t, cluster, name)
		got = s
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no Secret %s on %s", name, cluster)
	}
	return got
}

// waitNoUser waits until the Keystone user is gone.
func waitNoUser(t *testing.T, user string) {
	t.Helper()
	ctx := context.Background()
	s, err := openstack.NewIdentitySession(ctx, cloud.AdminCredentials())
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, found, err := s.LookupUser(ctx, user, "default")
		return err == nil && !found, nil
	})
	if err != nil {
		t.Fatalf("the Keystone user %s was never deleted", user)
	}
}
