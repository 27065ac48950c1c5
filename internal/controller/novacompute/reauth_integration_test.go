package novacompute_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/openstacktest"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/openstack"
)

// frontMarker is what every 401 of the suite's Front carries in its body.
const frontMarker = "front-BODY-reauth-5b1e"

// A pool that once logged in finds its token refused, and its password
// has meanwhile been rotated in Keystone, so gophercloud's re-login is
// refused too. Both 401 bodies carry a marker, and gophercloud's error
// names the URLs it called. The pool must say what failed in its
// AggregatesReady condition while no condition, event or log line carries
// a body, a URL or either password. Once the Secret holds the new
// password, the pool recovers.
func TestIntegrationPoolReauthFailureLeaksNothing(t *testing.T) {
	e := startStack(t)
	m := e.Management
	cl, admin := cloud.ForTest(t)
	const prefix = "reauth"
	nova, pool := prefix+"-nova", prefix+"-pool"
	user, oldPassword, newPassword := prefix+"-"+run, "reauth-OLD-"+run, "reauth-NEW-"+run
	cl.ServiceUser(user, oldPassword)
	ensureTenantFilterTests(t, cl, admin)

	createHandNova(t, m, nova, front.AuthURL(nil), user, oldPassword)
	newPool(t, e, pool, prefix+"-none", func(p *novav1alpha1.NovaCompute) {
		p.Spec.NovaRef.Name = nova
		p.Spec.TargetClusterRef = nil
		p.Spec.Image = &anvilmeta.ImageSpec{Repository: novav1alpha1.DefaultComputeImageRepository, Tag: "2026.1"}
	})
	t.Cleanup(func() {
		_ = m.Client.Delete(context.Background(), &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: pool, Namespace: ns}})
	})
	waitAggregatesEnsured(t, e, pool)

	if _, err := admin.EnsureUser(t.Context(), user, "default", newPassword); err != nil {
		t.Fatalf("rotating the user's password: %v", err)
	}
	front.Expire()
	eventually(t, 3*time.Minute, "the pool reports the refused token", func(ctx context.Context) (bool, string) {
		p, err := getPool(ctx, e, pool)
		if err != nil {
			return false, err.Error()
		}
		c, msg := conditionOf(p, novav1alpha1.AggregatesReadyCondition)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "401"), msg
	})
	if !reloginRefused(front.Log()) {
		t.Errorf("the Front saw no refused call followed by a refused re-login: %q", front.Log())
	}
	texts := append(append(m.EventMessages(t), logs.String()), poolConditionTexts(t, e)...)
	texts = append(texts, novaConditionTexts(t, m, nova)...)
	testenv.AssertNoLeak(t, texts, []string{frontMarker, oldPassword, newPassword, front.Host()})

	// The user's Secret catches up with Keystone and the cloud honours
	// tokens again: the pool recovers on its own, and can then reap what
	// its Nova no longer needs as it goes.
	front.Heal()
	m.PutSecret(t, ns, nova+"-password", map[string]string{"password": newPassword})
	waitAggregatesEnsured(t, e, pool)
	deletePool(t, e, pool)
}

// waitAggregatesEnsured waits until the pool's Nova calls succeed. The
// pool controller has one worker, which the suite's other pools keep busy
// with real Nova calls, so a pass may wait its turn for a while.
func waitAggregatesEnsured(t *testing.T, e *testenv.Environment, pool string) {
	t.Helper()
	eventually(t, 3*time.Minute, "pool "+pool+" AggregatesReady=AggregatesEnsured", func(ctx context.Context) (bool, string) {
		p, err := getPool(ctx, e, pool)
		if err != nil {
			return false, err.Error()
		}
		c, msg := conditionOf(p, novav1alpha1.AggregatesReadyCondition)
		return c != nil && c.Reason == novav1alpha1.AggregatesEnsuredReason, fmt.Sprintf("%s; %v", msg, testenv.ConditionMessages(p.Status.Conditions))
	})
}

// reloginRefused tells whether a call other than a login got 401 and the
// login right after it did too: gophercloud's reauthentication, refused.
func reloginRefused(log []string) bool {
	for i := 1; i < len(log); i++ {
		prev, cur := log[i-1], log[i]
		if !strings.HasPrefix(prev, "POST /v3/auth/tokens") && strings.HasSuffix(prev, " 401") && cur == "POST /v3/auth/tokens 401" {
			return true
		}
	}
	return false
}

// ensureTenantFilterTests creates the region's tenant_filter_tests
// aggregate for the test when no pool has, so the test's pool creates
// nothing it could not remove once Nova refuses it.
func ensureTenantFilterTests(t *testing.T, cl *openstacktest.Cleanup, admin *openstack.Session) {
	t.Helper()
	all, err := admin.ListAggregates(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(all, func(a openstack.Aggregate) bool { return a.Name == novav1alpha1.TenantFilterTestsAggregate }) {
		cl.Aggregate(novav1alpha1.TenantFilterTestsAggregate, "")
	}
}

// novaConditionTexts returns the messages of the Nova's conditions.
func novaConditionTexts(t *testing.T, m *testenv.Cluster, name string) []string {
	t.Helper()
	n := &novav1alpha1.Nova{}
	if err := m.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, n); err != nil {
		t.Fatal(err)
	}
	return testenv.ConditionMessages(n.Status.Conditions)
}
