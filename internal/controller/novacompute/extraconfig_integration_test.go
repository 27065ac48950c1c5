package novacompute_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// assertRefusedOptionNeverReachesAPod is the review's B3 story past
// admission, on a pool whose nova-compute runs: with the webhook taken out,
// the pool's extraConfig gains log_config_append, which would make oslo.log
// run code from a file. The controller refuses it on ConfigReady, naming
// the option, renders no ConfigMap with it and rolls no pod; removing the
// option renders the pool again.
func assertRefusedOptionNeverReachesAPod(t *testing.T, e *testenv.Environment, pool string) {
	t.Helper()
	m := e.Management
	before := podUIDs(t, m, pool)
	setExtraConfig(t, e, pool, map[string]map[string]string{"DEFAULT": {"log_config_append": "/var/lib/nova/evil.conf"}})
	eventually(t, time.Minute, "ConfigReady=ConfigError naming the option", func(ctx context.Context) (bool, string) {
		p, err := getPool(ctx, e, pool)
		if err != nil {
			return false, err.Error()
		}
		cond, msg := conditionOf(p, novav1alpha1.ConfigReadyCondition)
		return cond != nil && cond.Reason == novav1alpha1.ConfigErrorReason && cond.ObservedGeneration == p.Generation &&
			strings.Contains(cond.Message, "DEFAULT.log_config_append is not an option a pool may set"), msg
	})
	cms := &corev1.ConfigMapList{}
	if err := m.Client.List(t.Context(), cms, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": pool}); err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		for k, v := range cm.Data {
			if strings.Contains(v, "log_config_append") {
				t.Errorf("ConfigMap %s key %s carries the refused option", cm.Name, k)
			}
		}
	}
	if after := podUIDs(t, m, pool); !equalSets(before, after) {
		t.Errorf("the pool's pods changed from %v to %v for a refused option", before, after)
	}

	setExtraConfig(t, e, pool, nil)
	waitPoolReason(t, e, pool, novav1alpha1.ConfigReadyCondition, novav1alpha1.ConfigRenderedReason)
}

// setExtraConfig replaces the pool's extraConfig without the webhook, so
// that only the controller judges it.
func setExtraConfig(t *testing.T, e *testenv.Environment, pool string, extra map[string]map[string]string) {
	t.Helper()
	restore := e.Management.WithoutWebhook(t, "vnovacompute.openstack.c5c3.io")
	defer restore()
	p, err := getPool(t.Context(), e, pool)
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.ExtraConfig = extra
	if err := e.Management.Client.Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
}

// podUIDs returns the UIDs of the pool's pods.
func podUIDs(t *testing.T, c *testenv.Cluster, pool string) []types.UID {
	t.Helper()
	var uids []types.UID
	for _, p := range podsOf(t, c, pool) {
		uids = append(uids, p.UID)
	}
	return uids
}

// equalSets tells whether a and b hold the same UIDs.
func equalSets(a, b []types.UID) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[types.UID]bool{}
	for _, u := range a {
		seen[u] = true
	}
	for _, u := range b {
		if !seen[u] {
			return false
		}
	}
	return true
}
