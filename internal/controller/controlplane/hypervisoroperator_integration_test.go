package controlplane_test

import (
	"bytes"
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/openstacktest"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/openstack"
)

// authKeys are the seven keys of the hypervisor operator's auth Secret.
var authKeys = []string{"auth_url", "password", "project_domain_name", "project_name", "region_name", "user_domain_name", "username"}

// hvoControlPlane builds a ControlPlane whose Keystone is the real one,
// with the cloud admin's credentials, and which asks for the account.
func hvoControlPlane(t *testing.T, name string) *c5c3v1alpha1.ControlPlane {
	t.Helper()
	admin := cloud.AdminCredentials()
	putSecret(t, name+"-keystone-admin", map[string]string{
		"username": admin.Username, "password": admin.Password, "project_name": admin.ProjectName,
		"user_domain_name": admin.UserDomainName, "project_domain_name": admin.ProjectDomainName,
	})
	cp := buildControlPlane(t, name, false)
	ks := cp.Spec.Services.Keystone
	ks.InternalEndpoint = cloud.Endpoints[localcloud.KeystoneURL]
	ks.PublicEndpoint = cloud.Endpoints[localcloud.KeystonePublicURL]
	ks.AdminCredentialsSecretRef = &anvilmeta.LocalObjectReference{Name: name + "-keystone-admin"}
	cp.Spec.Services.Nova.HypervisorOperator = &c5c3v1alpha1.HypervisorOperatorSpec{}
	return cp
}

// authCredentials turns an auth Secret into credentials, trusting the
// public Keystone's CA as a compute node would.
func authCredentials(t *testing.T, s *corev1.Secret) openstack.Credentials {
	t.Helper()
	ca, err := os.ReadFile(cloud.Endpoints[localcloud.KeystoneCA])
	if err != nil {
		t.Fatal(err)
	}
	d := func(k string) string { return string(s.Data[k]) }
	return openstack.Credentials{AuthURL: d("auth_url"), Username: d("username"), Password: d("password"), ProjectName: d("project_name"),
		UserDomainName: d("user_domain_name"), ProjectDomainName: d("project_domain_name"), Region: d("region_name"), CABundle: ca}
}

// The account is created in the real Keystone once the Nova is Ready, its
// auth Secret works and reaches the pool's cluster only while the
// namespace there asks for it, deleting the credentials rotates it
// everywhere, and unsetting the block removes it all.
func TestIntegrationHypervisorOperatorAccount(t *testing.T) {
	e := startOperator(t)
	openstacktest.Require(t, cloud)
	ctx := context.Background()
	const name = "hvo"
	authName, credsName := name+"-nova-hypervisor-operator-auth", name+"-nova-hypervisor-operator-credentials"
	removeLeftoverAccount(t)
	cp := hvoControlPlane(t, name)
	// Someone who may create Secrets beside the ControlPlane plants the
	// credentials Secret and the metadata shared secret first, with
	// Anvil's ownership labels naming it.
	const planted = "a-password-somebody-else-chose"
	metadataName := name + c5c3v1alpha1.NovaMetadataSecretSuffix
	plantOwnedSecret(t, credsName, name, "password", planted)
	plantOwnedSecret(t, metadataName, name, "shared_secret", planted)
	// compute-a's namespace does not ask for the copy at first: the Nova
	// becomes Ready and its contract is delivered, and the cloud-admin
	// password is not.
	setAuthOptIn(t, false)
	t.Cleanup(func() { setAuthOptIn(t, true) })
	if err := e.Management.Client.Create(ctx, cp); err != nil {
		t.Fatal(err)
	}
	newPool(t, name, name+"-a", "compute-a")
	ready := waitNovaReady(t, name, c5c3v1alpha1.NovaReadyReason)
	if !strings.Contains(ready.Message, "auth Secret is withheld") {
		t.Errorf("NovaReady does not say the copy is withheld: %q", ready.Message)
	}
	waitMirror(t, "compute-a", name+"-nova-compute-config", func(*corev1.Secret) bool { return true }, time.Minute)
	if _, err := remoteSecret(t, "compute-a", authName); !apierrors.IsNotFound(err) {
		t.Fatalf("the auth Secret reached compute-a, whose namespace did not ask for it: %v", err)
	}
	setAuthOptIn(t, true)
	assertPlantedReplaced(t, credsName, "password", planted)
	assertPlantedReplaced(t, metadataName, "shared_secret", planted)

	auth := localSecret(t, authName)
	if k := slices.Sorted(maps.Keys(auth.Data)); !slices.Equal(k, authKeys) {
		t.Fatalf("auth Secret keys = %v, want exactly %v", k, authKeys)
	}
	if auth.Labels[c5c3v1alpha1.ComputeConfigMirrorLabel] != "" {
		t.Error("the source carries the mirror label")
	}
	copied := waitRemoteAuth(t, "compute-a", authName, string(auth.Data["password"]))
	if copied.Labels[c5c3v1alpha1.ComputeConfigMirrorLabel] != "true" || !maps.EqualFunc(copied.Data, auth.Data, bytes.Equal) {
		t.Errorf("the copy on compute-a: labels %v, or data differs from the source", copied.Labels)
	}
	first := authCredentials(t, auth)
	if _, err := openstack.NewIdentitySession(ctx, first); err != nil {
		t.Fatalf("a token with the auth Secret's seven keys: %v", err)
	}
	assertAccountRole(t, true)
	if string(auth.Data["password"]) == planted {
		t.Fatal("the account's password is the one planted in its credentials Secret")
	}
	assertGeneratedRecorded(t, name, credsName, string(localSecret(t, credsName).Data["password"]))
	leaks := []string{first.Password}

	// Rotation: a deleted credentials Secret is a new password everywhere.
	if err := e.Management.Client.Delete(ctx, localSecret(t, credsName)); err != nil {
		t.Fatal(err)
	}
	var rotated *corev1.Secret
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		s, err := remoteSecret(t, "compute-a", authName)
		rotated = s
		return err == nil && string(s.Data["password"]) != first.Password, nil
	})
	if err != nil {
		t.Fatal("the copy on compute-a did not carry a new password within 10 s")
	}
	second := authCredentials(t, rotated)
	leaks = append(leaks, second.Password)
	if _, err := openstack.NewIdentitySession(ctx, second); err != nil {
		t.Errorf("the rotated password does not log in: %v", err)
	}
	if _, err := openstack.NewIdentitySession(ctx, first); err == nil {
		t.Error("the old password still logs in")
	}
	// A deletion is a rotation, not a plant: no second replacement.
	if n := countEvents(t, c5c3v1alpha1.GeneratedSecretReplacedEvent, credsName); n != 1 {
		t.Errorf("%d %s events for %s, want only the planted value's", n, c5c3v1alpha1.GeneratedSecretReplacedEvent, credsName)
	}

	// Revoking the opt-in withdraws the copy, with an event, and leaves the
	// account and the contract; granting it again brings the copy back.
	setAuthOptIn(t, false)
	waitGone(t, func() error { _, err := remoteSecret(t, "compute-a", authName); return err })
	waitEvent(t, c5c3v1alpha1.HypervisorOperatorCopyWithdrawnEvent, name)
	assertAccountRole(t, true)
	waitMirror(t, "compute-a", name+"-nova-compute-config", func(*corev1.Secret) bool { return true }, time.Minute)
	setAuthOptIn(t, true)
	waitRemoteAuth(t, "compute-a", authName, second.Password)

	// Unsetting the block prunes the copy, the Secrets and the account.
	patchControlPlane(t, name, func(cp *c5c3v1alpha1.ControlPlane) { cp.Spec.Services.Nova.HypervisorOperator = nil })
	waitGone(t, func() error { _, err := remoteSecret(t, "compute-a", authName); return err })
	for _, n := range []string{authName, credsName} {
		waitGone(t, func() error {
			return e.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: n}, &corev1.Secret{})
		})
	}
	assertAccountRole(t, false)

	// A deleted ControlPlane takes its account with it.
	patchControlPlane(t, name, func(cp *c5c3v1alpha1.ControlPlane) {
		cp.Spec.Services.Nova.HypervisorOperator = &c5c3v1alpha1.HypervisorOperatorSpec{}
	})
	waitRemoteAuth(t, "compute-a", authName, "")
	leaks = append(leaks, string(localSecret(t, authName).Data["password"]))
	assertAccountRole(t, true)
	live := &c5c3v1alpha1.ControlPlane{}
	if err := e.Management.Client.Get(ctx, client.ObjectKeyFromObject(cp), live); err != nil {
		t.Fatal(err)
	}
	conds := testenv.ConditionMessages(live.Status.Conditions)
	if err := e.Management.Client.Delete(ctx, cp); err != nil {
		t.Fatal(err)
	}
	waitGone(t, func() error {
		return e.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, &c5c3v1alpha1.ControlPlane{})
	})
	assertAccountRole(t, false)
	if _, err := remoteSecret(t, "compute-a", authName); !apierrors.IsNotFound(err) {
		t.Errorf("the copy outlived its ControlPlane: %v", err)
	}
	texts := append(append([]string{logs.String()}, e.Management.EventMessages(t)...), conds...)
	testenv.AssertNoLeak(t, texts, append(leaks, cloud.AdminCredentials().Password))
}

// setAuthOptIn sets or removes the label on compute-a's test namespace
// that asks for the hypervisor operator's copy.
func setAuthOptIn(t *testing.T, on bool) {
	t.Helper()
	c := env.ComputeCluster("compute-a").Client
	ns := &corev1.Namespace{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: testNamespace}, ns); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(ns.DeepCopy())
	if on {
		ns.Labels[c5c3v1alpha1.HypervisorOperatorCredentialsLabel] = "true"
	} else {
		delete(ns.Labels, c5c3v1alpha1.HypervisorOperatorCredentialsLabel)
	}
	if err := c.Patch(context.Background(), ns, patch); err != nil {
		t.Fatal(err)
	}
}

// waitEvent waits for an event of reason about the ControlPlane name.
func waitEvent(t *testing.T, reason, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list := &corev1.EventList{}
		if err := env.Management.Client.List(ctx, list, client.InNamespace(testNamespace)); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		for _, ev := range list.Items {
			if ev.Reason == reason && ev.InvolvedObject.Kind == "ControlPlane" && ev.InvolvedObject.Name == name {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event about ControlPlane %s", reason, name)
	}
}

// waitRemoteAuth waits for the auth copy on a cluster, holding password
// unless that is empty.
func waitRemoteAuth(t *testing.T, cluster, name, password string) *corev1.Secret {
	t.Helper()
	var got *corev1.Secret
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		s, err := remoteSecret(t, cluster, name)
		got = s
		return err == nil && (password == "" || string(s.Data["password"]) == password), nil
	})
	if err != nil {
		t.Fatalf("no auth Secret %s on %s", name, cluster)
	}
	return got
}

// removeLeftoverAccount deletes an account another Anvil left in the shared
// local Keystone, such as a devstack's, which this test's ControlPlane
// would rightly refuse to adopt.
func removeLeftoverAccount(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	s, err := openstack.NewIdentitySession(ctx, cloud.AdminCredentials())
	if err != nil {
		t.Fatal(err)
	}
	if u, found, err := s.LookupUser(ctx, c5c3v1alpha1.HypervisorOperatorUser, "default"); err == nil && found && strings.HasPrefix(u.Description, "Managed by Anvil") {
		if err := s.DeleteUser(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
	}
	if p, found, err := s.LookupProject(ctx, c5c3v1alpha1.HypervisorOperatorProject, "default"); err == nil && found && strings.HasPrefix(p.Description, "Managed by Anvil") {
		if err := s.DeleteProject(ctx, p.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// assertAccountRole checks, as the cloud admin, that the user and the
// project exist, with the role admin on the project, or that neither does.
func assertAccountRole(t *testing.T, exist bool) {
	t.Helper()
	ctx := context.Background()
	s, err := openstack.NewIdentitySession(ctx, cloud.AdminCredentials())
	if err != nil {
		t.Fatal(err)
	}
	user, userFound, err := s.LookupUser(ctx, c5c3v1alpha1.HypervisorOperatorUser, "default")
	if err != nil {
		t.Fatal(err)
	}
	project, projectFound, err := s.LookupProject(ctx, c5c3v1alpha1.HypervisorOperatorProject, "default")
	if err != nil {
		t.Fatal(err)
	}
	if !exist {
		if userFound || projectFound {
			t.Errorf("after pruning: user found %v, project found %v", userFound, projectFound)
		}
		return
	}
	if !userFound || !projectFound {
		t.Fatalf("user found %v, project found %v", userFound, projectFound)
	}
	roleID, err := s.FindRole(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	held, err := s.RolesOn(ctx, user.ID, project.ID)
	if err != nil || !slices.Contains(held, roleID) {
		t.Errorf("the user does not hold admin on its project: %v, %v", held, err)
	}
}

// patchControlPlane changes a ControlPlane's spec.
func patchControlPlane(t *testing.T, name string, change func(*c5c3v1alpha1.ControlPlane)) {
	t.Helper()
	ctx := context.Background()
	cp := &c5c3v1alpha1.ControlPlane{}
	if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, cp); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cp.DeepCopy())
	change(cp)
	if err := env.Management.Client.Patch(ctx, cp, patch); err != nil {
		t.Fatal(err)
	}
}

// waitGone waits until get reports NotFound.
func waitGone(t *testing.T, get func() error) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return apierrors.IsNotFound(get()), nil
	})
	if err != nil {
		t.Fatal("an object was never removed")
	}
}
