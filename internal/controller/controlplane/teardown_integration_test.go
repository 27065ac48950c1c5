package controlplane_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
)

// A ControlPlane deleted while one of its clusters cannot be reached
// removes its copies from the others at once, stays with NovaReady naming
// that cluster, and finishes the teardown there once it answers again.
func TestIntegrationTeardownWaitsForAnUnreachableCluster(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	const name = "tdw"
	copyName := name + "-nova-metadata-agent-secret"
	newControlPlane(t, name, true)
	waitNovaReady(t, name, c5c3v1alpha1.NovaReadyReason)
	newAgent(t, name+"-a", "compute-a", copyName)
	newAgent(t, name+"-b", "compute-b", copyName)
	for _, cluster := range []string{"compute-a", "compute-b"} {
		waitMirror(t, cluster, copyName, func(*corev1.Secret) bool { return true }, 30*time.Second)
	}

	b := env.ComputeCluster("compute-b")
	if err := b.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = b.StartAPIServer()
		}
	})
	cp := &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace}}
	if err := env.Management.Client.Delete(ctx, cp); err != nil {
		t.Fatal(err)
	}
	waitGone(t, func() error { _, err := remoteSecret(t, "compute-a", copyName); return err })
	c := waitNovaReady(t, name, anvilmeta.TargetClusterUnavailableReason)
	if !strings.Contains(c.Message, "compute-b") || strings.Contains(c.Message, "compute-a") {
		t.Errorf("NovaReady says %q, want it to name compute-b alone", c.Message)
	}

	// Once compute-b answers, its copy goes and so does the ControlPlane.
	if err := b.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		_, err := remoteSecret(t, "compute-b", copyName)
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatal("the copy on compute-b outlived its ControlPlane after the cluster came back")
	}
	waitGone(t, func() error {
		return env.Management.Client.Get(ctx, client.ObjectKeyFromObject(cp), &c5c3v1alpha1.ControlPlane{})
	})
	assertNoLeak(t)
}
