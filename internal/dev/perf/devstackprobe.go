package perf

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/novaconfig"
)

// ProbeTarget is the most a ControlPlane spec change may take on a
// devstack, in direct writes and watches of one Secret.
const ProbeTarget = 4.0

// probeSecret is the baseline's Secret on the compute cluster; the probe
// creates it and deletes it when it is done.
const probeSecret = "anvil-probe-direct"

// probePool is the pool the probe adds when none of the ControlPlane's
// Nova runs on the compute cluster, so that a mirror is there to watch.
const probePool = "anvil-probe"

var (
	controlPlanes = schema.GroupVersionResource{Group: c5c3v1alpha1.GroupVersion.Group, Version: c5c3v1alpha1.GroupVersion.Version, Resource: "controlplanes"}
	novaComputes  = schema.GroupVersionResource{Group: novav1alpha1.GroupVersion.Group, Version: novav1alpha1.GroupVersion.Version, Resource: "novacomputes"}
)

// ProbeOptions say which devstack objects the probe uses.
type ProbeOptions struct {
	// Management reaches the cluster of the ControlPlane, Compute the
	// cluster whose mirror is watched.
	Management dynamic.Interface
	Compute    kubernetes.Interface
	// Namespace holds the ControlPlane, and the mirror on the compute
	// cluster.
	Namespace, ControlPlane string
	// Cluster is the compute cluster's name in the registry, for the pool
	// the probe adds when the Nova has none there.
	Cluster string
	Samples int
}

// ProbeResult is what the probe measured.
type ProbeResult struct {
	// Change is from the ControlPlane patch until the mirror carries it;
	// Direct from one Secret write on the compute cluster until its watch
	// delivers it.
	Change, Direct Samples
}

// Ratio is the change's p50 over the direct write's.
func (r *ProbeResult) Ratio() float64 { return Ratio(r.Change.Median(), r.Direct.Median()) }

// ProbeDevstack changes the ControlPlane's services.nova.consoleProxy.hostname
// o.Samples times, each until the mirror on the compute cluster carries the
// new address, and pairs each change with a direct write of one Secret on
// that cluster. The console proxy's settings are put back at the end.
func ProbeDevstack(ctx context.Context, o ProbeOptions, progress io.Writer) (res *ProbeResult, err error) {
	cps := o.Management.Resource(controlPlanes).Namespace(o.Namespace)
	cp, err := cps.Get(ctx, o.ControlPlane, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading ControlPlane %s/%s: %w", o.Namespace, o.ControlPlane, err)
	}
	original, had, _ := unstructured.NestedFieldCopy(cp.Object, "spec", "services", "nova", "consoleProxy")
	defer func() {
		// Put back exactly what the user had: a JSON patch replaces the
		// whole field, where a merge patch would keep a hostname the probe
		// added to a consoleProxy that had none.
		restore, _ := json.Marshal(restoreConsoleProxy(original, had))
		if _, rerr := cps.Patch(context.WithoutCancel(ctx), o.ControlPlane, types.JSONPatchType, restore, metav1.PatchOptions{}); rerr != nil && err == nil {
			err = fmt.Errorf("putting back services.nova.consoleProxy: %w", rerr)
		}
	}()
	added, err := ensurePool(ctx, o)
	if err != nil {
		return nil, err
	}
	if added {
		defer func() {
			_ = o.Management.Resource(novaComputes).Namespace(o.Namespace).Delete(context.WithoutCancel(ctx), probePool, metav1.DeleteOptions{})
		}()
	}
	secrets := o.Compute.CoreV1().Secrets(o.Namespace)
	if err := putProbeSecret(ctx, secrets, "v0"); err != nil {
		return nil, err
	}
	defer func() { _ = secrets.Delete(context.WithoutCancel(ctx), probeSecret, metav1.DeleteOptions{}) }()
	direct, err := openSecretWatch(ctx, o.Compute, o.Namespace, "compute", probeSecret)
	if err != nil {
		return nil, err
	}
	defer direct.stop()
	mirror, err := openSecretWatch(ctx, o.Compute, o.Namespace, "compute", o.ControlPlane+c5c3v1alpha1.NovaSuffix+novav1alpha1.ComputeConfigSuffix)
	if err != nil {
		return nil, err
	}
	defer mirror.stop()
	if _, err := mirror.waitFor(ctx, want{novaconfig.KeyConfig, func(b []byte) bool { return len(b) > 0 }}, convergeTimeout); err != nil {
		return nil, fmt.Errorf("waiting for the first mirror: %w", err)
	}

	res = &ProbeResult{}
	stamp := time.Now().Unix()
	for i := range warmups + o.Samples {
		if err := waitControlPlaneSettled(ctx, cps, o.ControlPlane); err != nil {
			return nil, err
		}
		value := fmt.Sprintf("v%d-%d", stamp, i)
		start := time.Now()
		if err := putProbeSecret(ctx, secrets, value); err != nil {
			return nil, err
		}
		at, err := direct.waitFor(ctx, equal("value", value), convergeTimeout)
		if err != nil {
			return nil, err
		}
		d := at.Sub(start)

		host := fmt.Sprintf("probe-%d-%d.console.invalid", stamp, i)
		patch := fmt.Sprintf(`{"spec":{"services":{"nova":{"consoleProxy":{"enabled":true,"hostname":%q}}}}}`, host)
		start = time.Now()
		if _, err := cps.Patch(ctx, o.ControlPlane, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return nil, fmt.Errorf("patching ControlPlane %s/%s: %w", o.Namespace, o.ControlPlane, err)
		}
		at, err = mirror.waitFor(ctx, inConfig("//"+host+"/"), convergeTimeout)
		if err != nil {
			return nil, err
		}
		c := at.Sub(start)
		if i >= warmups {
			res.Direct, res.Change = append(res.Direct, d), append(res.Change, c)
		}
		fmt.Fprintf(progress, "sample %d: ControlPlane change %s, direct write %s\n", i-warmups+1, Millis(c), Millis(d))
	}
	return res, nil
}

// ensurePool makes sure a pool of the ControlPlane's Nova runs on the
// compute cluster, adding one that selects no node when there is none, and
// tells whether it added it.
func ensurePool(ctx context.Context, o ProbeOptions) (bool, error) {
	pools := o.Management.Resource(novaComputes).Namespace(o.Namespace)
	list, err := pools.List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, fmt.Errorf("listing the pools: %w", err)
	}
	nova := o.ControlPlane + c5c3v1alpha1.NovaSuffix
	for _, p := range list.Items {
		ref, _, _ := unstructured.NestedString(p.Object, "spec", "novaRef", "name")
		cluster, _, _ := unstructured.NestedString(p.Object, "spec", "targetClusterRef", "name")
		if ref == nova && cluster == o.Cluster && p.GetName() != probePool {
			return false, nil
		}
	}
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": novav1alpha1.GroupVersion.String(), "kind": "NovaCompute",
		"metadata": map[string]any{"name": probePool, "namespace": o.Namespace},
		"spec": map[string]any{
			"novaRef":          map[string]any{"name": nova},
			"nodeSelector":     map[string]any{"openstack.c5c3.io/nova-compute-pool": probePool},
			"targetClusterRef": map[string]any{"name": o.Cluster},
		},
	}}
	if _, err := pools.Create(ctx, pool, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("adding the pool %s: %w", probePool, err)
	}
	return true, nil
}

// restoreConsoleProxy is the JSON patch that puts consoleProxy back to
// original, or removes it when the ControlPlane had none (had is false).
func restoreConsoleProxy(original any, had bool) []map[string]any {
	const path = "/spec/services/nova/consoleProxy"
	if !had {
		return []map[string]any{{"op": "remove", "path": path}}
	}
	return []map[string]any{{"op": "add", "path": path, "value": original}}
}

// putProbeSecret creates or updates the baseline's Secret. Unlike
// Stack.PutSecret it does not read first: the baseline is one request, as
// a user's kubectl apply of the Secret would be, and the probe owns the
// Secret whole.
func putProbeSecret(ctx context.Context, secrets typedcorev1.SecretInterface, value string) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: probeSecret}, StringData: map[string]string{"value": value}}
	_, err := secrets.Update(ctx, s, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = secrets.Create(ctx, s, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing Secret %s: %w", probeSecret, err)
	}
	return nil
}

// waitControlPlaneSettled returns once the ControlPlane reads Ready for
// its generation, and a second more, so that each change starts on a
// settled devstack: the Nova has rolled out the previous one.
func waitControlPlaneSettled(ctx context.Context, cps dynamic.ResourceInterface, name string) error {
	deadline := time.Now().Add(convergeTimeout)
	for time.Now().Before(deadline) {
		cp, err := cps.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if readyForGeneration(cp) {
			time.Sleep(time.Second)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("ControlPlane %s was not Ready within %s", name, convergeTimeout)
}

// readyForGeneration tells whether an object's Ready condition is True for
// its generation.
func readyForGeneration(obj *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	if observed < obj.GetGeneration() {
		return false
	}
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			return m["status"] == "True"
		}
	}
	return false
}
