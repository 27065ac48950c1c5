package nova_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// fakeDatabaseHost is where these Novas' databases are said to be. The
// package's pod runner runs their database Jobs, so nova-manage dials it:
// a loopback address that nothing listens on refuses at once, where a
// made-up name went to the host's resolver, off the machine.
const fakeDatabaseHost = "127.0.0.3"

// withDatabases declares both databases of a Nova, reading the Secret
// {name}-db.
func withDatabases(n *novav1alpha1.Nova) *novav1alpha1.Nova {
	ref := novav1alpha1.DatabaseSecretRef{Name: n.Name + "-db"}
	n.Spec.APIDatabase = &novav1alpha1.DatabaseSpec{Host: fakeDatabaseHost, Database: "nova_api", SecretRef: ref}
	n.Spec.Database = &novav1alpha1.DatabaseSpec{Host: fakeDatabaseHost, Port: 13306, Database: "nova", SecretRef: ref}
	return n
}

// connections reads the two connection URLs of a published
// {nova}-manage-config.
func connections(t *testing.T, name string) map[string]*url.URL {
	t.Helper()
	s, err := getSecret(t, name+"-manage-config")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*url.URL{}
	section := ""
	for _, line := range strings.Split(string(s.Data["nova-manage.conf"]), "\n") {
		switch {
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		case strings.HasPrefix(line, "connection = "):
			u, err := url.Parse(strings.TrimPrefix(line, "connection = "))
			if err != nil {
				t.Fatalf("[%s] connection does not parse", section)
			}
			out[section] = u
		}
	}
	return out
}

func password(u *url.URL) string {
	if u == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return pw
}

// Both databases are published in one owned Secret, whose URLs carry the
// escaped credentials; a rotated password rewrites it in place.
func TestIntegrationManageConfigPublishedAndRotated(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	inputs(t, "mng")
	putSecret(t, "mng-db", map[string]string{"username": "nova", "password": dbPass})
	if err := e.Management.Client.Create(ctx, withDatabases(newNova("mng"))); err != nil {
		t.Fatal(err)
	}
	c := waitConditionOf(t, "mng", novav1alpha1.ManageConfigReadyCondition, novav1alpha1.ManageConfigPublishedReason)
	if c.Status != metav1.ConditionTrue || c.Message != "published mng-manage-config" {
		t.Errorf("ManageConfigReady = %+v", c)
	}
	n := getNova(t, "mng")
	if ref := n.Status.ManageConfigSecretRef; ref == nil || ref.Name != "mng-manage-config" {
		t.Errorf("manageConfigSecretRef = %+v", ref)
	}
	// Ready now waits for the control plane's Jobs, never for this step.
	if r := apimeta.FindStatusCondition(n.Status.Conditions, anvilmeta.ReadyCondition); r == nil || strings.HasPrefix(r.Message, novav1alpha1.ManageConfigReadyCondition) {
		t.Errorf("Ready = %+v", r)
	}

	s, err := getSecret(t, "mng-manage-config")
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(s); got != "nova-manage.conf" {
		t.Errorf("keys = %s", got)
	}
	if s.Labels[novav1alpha1.ComponentLabel] != novav1alpha1.ManageConfigComponent {
		t.Errorf("labels = %v", s.Labels)
	}
	if ref := metav1.GetControllerOf(s); ref == nil || ref.Kind != "Nova" || ref.Name != "mng" {
		t.Errorf("not controlled by the Nova: %v", s.OwnerReferences)
	}
	urls := connections(t, "mng")
	api, cell := urls["api_database"], urls["database"]
	if api == nil || cell == nil {
		t.Fatalf("sections = %v", urls)
	}
	if password(api) != dbPass || password(cell) != dbPass || api.User.Username() != "nova" {
		t.Error("the credentials do not round-trip through the connection URLs")
	}
	if api.Host != fakeDatabaseHost+":3306" || api.Path != "/nova_api" || cell.Host != fakeDatabaseHost+":13306" || cell.Path != "/nova" {
		t.Errorf("api %s%s, cell %s%s", api.Host, api.Path, cell.Host, cell.Path)
	}

	putSecret(t, "mng-db", map[string]string{"username": "nova", "password": rotatedDBPass})
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return password(connections(t, "mng")["database"]) == rotatedDBPass, nil
	})
	if err != nil {
		t.Fatal("a rotated database password did not reach the manage config")
	}
	if now, _ := getSecret(t, "mng-manage-config"); now.UID != s.UID {
		t.Error("the manage config was recreated instead of updated in place")
	}
	assertNoLeak(t)
}

// A missing database Secret or key waits under its own reason, naming the
// field, the Secret and the key; the compute contract is published anyway.
func TestIntegrationManageConfigWaitsForTheDatabaseSecret(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	inputs(t, "mwait")
	if err := e.Management.Client.Create(ctx, withDatabases(newNova("mwait"))); err != nil {
		t.Fatal(err)
	}
	c := waitConditionOf(t, "mwait", novav1alpha1.ManageConfigReadyCondition, novav1alpha1.WaitingForDatabaseSecretReason)
	if c.Message != "spec.apiDatabase.secretRef: Secret "+testNamespace+"/mwait-db does not exist" {
		t.Errorf("message = %q", c.Message)
	}
	waitCondition(t, "mwait", novav1alpha1.ComputeConfigPublishedReason)
	if _, err := getSecret(t, "mwait-manage-config"); !apierrors.IsNotFound(err) {
		t.Errorf("a manage config was written without its Secret: %v", err)
	}
	n := getNova(t, "mwait")
	if n.Status.ManageConfigSecretRef != nil || readyReason(n) != novav1alpha1.WaitingForDatabaseSecretReason {
		t.Errorf("reference %+v, Ready reason %q", n.Status.ManageConfigSecretRef, readyReason(n))
	}

	// The password key is missing: the message names it.
	putSecret(t, "mwait-db", map[string]string{"username": "nova"})
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		c := apimeta.FindStatusCondition(getNova(t, "mwait").Status.Conditions, novav1alpha1.ManageConfigReadyCondition)
		return c != nil && strings.Contains(c.Message, `no non-empty key "password"`), nil
	})
	if err != nil {
		t.Fatal("the missing password key was not reported")
	}

	putSecret(t, "mwait-db", map[string]string{"username": "nova", "password": dbPass})
	waitConditionOf(t, "mwait", novav1alpha1.ManageConfigReadyCondition, novav1alpha1.ManageConfigPublishedReason)
	assertNoLeak(t)
}

// A credential with a newline, or one database without the other, is an
// error that keeps the published Secret; removing both databases deletes
// it and clears the reference.
func TestIntegrationManageConfigErrorsAndRemoval(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	inputs(t, "mdel")
	putSecret(t, "mdel-db", map[string]string{"username": "nova", "password": dbPass})
	if err := e.Management.Client.Create(ctx, withDatabases(newNova("mdel"))); err != nil {
		t.Fatal(err)
	}
	waitConditionOf(t, "mdel", novav1alpha1.ManageConfigReadyCondition, novav1alpha1.ManageConfigPublishedReason)
	published, _ := getSecret(t, "mdel-manage-config")

	putSecret(t, "mdel-db", map[string]string{"username": "nova", "password": rotatedDBPass + "\n[DEFAULT]\ndebug = true"})
	c := waitConditionOf(t, "mdel", novav1alpha1.ManageConfigReadyCondition, novav1alpha1.ManageConfigErrorReason)
	if c.Message != "spec: section [api_database] contains a control character" {
		t.Errorf("message = %q", c.Message)
	}
	if now, _ := getSecret(t, "mdel-manage-config"); now.ResourceVersion != published.ResourceVersion {
		t.Error("an unsafe credential changed the published manage config")
	}
	putSecret(t, "mdel-db", map[string]string{"username": "nova", "password": dbPass})
	waitConditionOf(t, "mdel", novav1alpha1.ManageConfigReadyCondition, novav1alpha1.ManageConfigPublishedReason)

	n := getNova(t, "mdel")
	n.Spec.Database = nil
	if err := e.Management.Client.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	c = waitConditionOf(t, "mdel", novav1alpha1.ManageConfigReadyCondition, novav1alpha1.ManageConfigErrorReason)
	if c.Message != "spec.apiDatabase is set without spec.database: nova-manage needs both databases" {
		t.Errorf("message = %q", c.Message)
	}
	if _, err := getSecret(t, "mdel-manage-config"); err != nil {
		t.Errorf("one database removed deleted the manage config: %v", err)
	}

	n = getNova(t, "mdel")
	n.Spec.APIDatabase = nil
	if err := e.Management.Client.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	c = waitConditionOf(t, "mdel", novav1alpha1.ManageConfigReadyCondition, novav1alpha1.ManageConfigNotRequiredReason)
	if c.Status != metav1.ConditionTrue {
		t.Errorf("ManageConfigReady = %+v", c)
	}
	if _, err := getSecret(t, "mdel-manage-config"); !apierrors.IsNotFound(err) {
		t.Errorf("the manage config survived removing the databases: %v", err)
	}
	n = getNova(t, "mdel")
	// Without databases the control plane cannot run, which Ready says.
	if n.Status.ManageConfigSecretRef != nil || readyReason(n) != novav1alpha1.ServiceConfigErrorReason {
		t.Errorf("reference %+v, Ready reason %q", n.Status.ManageConfigSecretRef, readyReason(n))
	}
	assertNoLeak(t)
}

// A same-named Secret Anvil does not control is never overwritten, and a
// Nova without databases leaves it alone too.
func TestIntegrationManageConfigLeavesAForeignSecret(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	inputs(t, "mfor")
	putSecret(t, "mfor-manage-config", map[string]string{"nova-manage.conf": "mine"})
	if err := e.Management.Client.Create(ctx, newNova("mfor")); err != nil {
		t.Fatal(err)
	}
	waitConditionOf(t, "mfor", novav1alpha1.ManageConfigReadyCondition, novav1alpha1.ManageConfigNotRequiredReason)
	if _, err := getSecret(t, "mfor-manage-config"); err != nil {
		t.Errorf("a foreign Secret was deleted: %v", err)
	}

	putSecret(t, "mfor-db", map[string]string{"username": "nova", "password": dbPass})
	n := getNova(t, "mfor")
	withDatabases(n)
	if err := e.Management.Client.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	c := waitConditionOf(t, "mfor", novav1alpha1.ManageConfigReadyCondition, novav1alpha1.ManageConfigErrorReason)
	if !strings.Contains(c.Message, "mfor-manage-config") {
		t.Errorf("message = %q", c.Message)
	}
	if s, _ := getSecret(t, "mfor-manage-config"); string(s.Data["nova-manage.conf"]) != "mine" {
		t.Error("a foreign Secret was overwritten")
	}
	assertNoLeak(t)
}
