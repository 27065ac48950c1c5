package podrunner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
)

// HostIP is the address of every node of the runner and of every pod it
// runs: the processes share this host's network.
const HostIP = "127.0.0.1"

// envVar is one resolved variable of a container. secret marks a value that
// came, wholly or through a $(VAR) reference, from a Secret, so that it can
// be kept out of command lines.
type envVar struct {
	name   string
	value  string
	secret bool
}

// resolveEnv computes a container's environment as the kubelet would:
// envFrom first, in order, then env, where a later definition replaces an
// earlier one and $(VAR) refers to variables defined before it. Errors name
// the variable and the object, never a value.
func resolveEnv(ctx context.Context, pod *corev1.Pod, c *corev1.Container, src objectSource) ([]envVar, error) {
	var out []envVar
	index := map[string]int{}
	set := func(v envVar) {
		if i, ok := index[v.name]; ok {
			out[i] = v
			return
		}
		index[v.name] = len(out)
		out = append(out, v)
	}
	for _, from := range c.EnvFrom {
		data, secret, err := envFromData(ctx, pod.Namespace, from, src)
		if err != nil {
			return nil, err
		}
		// Keys in name order, so that the same pod always gets the same
		// environment in the same order.
		for _, k := range slices.Sorted(maps.Keys(data)) {
			set(envVar{name: from.Prefix + k, value: data[k], secret: secret})
		}
	}
	for _, e := range c.Env {
		v, err := envValue(ctx, pod, c, e, src, func(name string) (envVar, bool) {
			i, ok := index[name]
			if !ok {
				return envVar{}, false
			}
			return out[i], true
		})
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		set(v)
	}
	return out, nil
}

// envFromData reads the keys of one envFrom source.
func envFromData(ctx context.Context, namespace string, from corev1.EnvFromSource, src objectSource) (map[string]string, bool, error) {
	switch {
	case from.SecretRef != nil:
		s, err := src.Secret(ctx, namespace, from.SecretRef.Name)
		if apierrors.IsNotFound(err) && isOptional(from.SecretRef.Optional) {
			return nil, true, nil
		}
		if err != nil {
			return nil, true, fmt.Errorf("envFrom Secret %s: %w", from.SecretRef.Name, err)
		}
		data := make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			data[k] = string(v)
		}
		return data, true, nil
	case from.ConfigMapRef != nil:
		cm, err := src.ConfigMap(ctx, namespace, from.ConfigMapRef.Name)
		if apierrors.IsNotFound(err) && isOptional(from.ConfigMapRef.Optional) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("envFrom ConfigMap %s: %w", from.ConfigMapRef.Name, err)
		}
		return cm.Data, false, nil
	}
	return nil, false, nil
}

// envValue resolves one env entry; defined looks up variables set before it.
func envValue(ctx context.Context, pod *corev1.Pod, c *corev1.Container, e corev1.EnvVar, src objectSource, defined func(string) (envVar, bool)) (envVar, error) {
	from := e.ValueFrom
	if from == nil {
		secret := false
		value := expand(e.Value, func(name string) (string, bool) {
			v, ok := defined(name)
			secret = secret || (ok && v.secret)
			return v.value, ok
		})
		return envVar{name: e.Name, value: value, secret: secret}, nil
	}
	switch {
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		s, err := src.Secret(ctx, pod.Namespace, ref.Name)
		if apierrors.IsNotFound(err) && isOptional(ref.Optional) {
			return envVar{name: e.Name, secret: true}, nil
		}
		if err != nil {
			return envVar{}, fmt.Errorf("reading Secret %s: %w", ref.Name, err)
		}
		v, ok := s.Data[ref.Key]
		if !ok && !isOptional(ref.Optional) {
			return envVar{}, fmt.Errorf("key %q not found in Secret %s", ref.Key, ref.Name)
		}
		return envVar{name: e.Name, value: string(v), secret: true}, nil
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		cm, err := src.ConfigMap(ctx, pod.Namespace, ref.Name)
		if apierrors.IsNotFound(err) && isOptional(ref.Optional) {
			return envVar{name: e.Name}, nil
		}
		if err != nil {
			return envVar{}, fmt.Errorf("reading ConfigMap %s: %w", ref.Name, err)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			b, binOK := cm.BinaryData[ref.Key]
			v, ok = string(b), binOK
		}
		if !ok && !isOptional(ref.Optional) {
			return envVar{}, fmt.Errorf("key %q not found in ConfigMap %s", ref.Key, ref.Name)
		}
		return envVar{name: e.Name, value: v}, nil
	case from.FieldRef != nil:
		v, err := fieldValue(pod, from.FieldRef.FieldPath)
		return envVar{name: e.Name, value: v}, err
	case from.ResourceFieldRef != nil:
		v, err := resourceValue(c, from.ResourceFieldRef)
		return envVar{name: e.Name, value: v}, err
	}
	return envVar{}, errors.New("unsupported valueFrom")
}

// isOptional dereferences an optional flag.
func isOptional(b *bool) bool { return b != nil && *b }

// fieldValue resolves a downward API field path. The host's address is
// this machine's; the pod's is the one the runner reports for it, kept in
// its status, which is the host's unless the pod has its own.
func fieldValue(pod *corev1.Pod, fieldPath string) (string, error) {
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return HostIP, nil
	case "status.podIP", "status.podIPs":
		if pod.Status.PodIP != "" {
			return pod.Status.PodIP, nil
		}
		return HostIP, nil
	}
	if key, ok := subscript(fieldPath, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(fieldPath, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", fieldPath)
}

// subscript parses "prefix['key']" and returns the key.
func subscript(fieldPath, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(fieldPath, prefix+"['")
	if !ok || !strings.HasSuffix(rest, "']") {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}

// Node capacity the runner advertises; resource fieldRefs of containers
// without a limit fall back to it, as they fall back to the node's
// allocatable with the kubelet.
var nodeCapacity = corev1.ResourceList{
	corev1.ResourceCPU:              resource.MustParse("64"),
	corev1.ResourceMemory:           resource.MustParse("256Gi"),
	corev1.ResourceEphemeralStorage: resource.MustParse("500Gi"),
	corev1.ResourcePods:             resource.MustParse("110"),
}

// resourceValue resolves a resourceFieldRef such as limits.memory, rounded
// up to whole divisors like the kubelet does.
func resourceValue(c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported resourceFieldRef %q", ref.Resource)
	}
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok {
		// An unset request is zero; an unset limit is what the node has.
		if kind == "limits" {
			if q, ok = nodeCapacity[corev1.ResourceName(name)]; !ok {
				return "", fmt.Errorf("unsupported resourceFieldRef %q", ref.Resource)
			}
		}
	}
	divisor := resource.MustParse("1")
	if !ref.Divisor.IsZero() {
		divisor = ref.Divisor
	}
	if name == string(corev1.ResourceCPU) {
		return fmt.Sprint(int64(math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue())))), nil
	}
	return fmt.Sprint(int64(math.Ceil(float64(q.Value()) / float64(divisor.Value())))), nil
}

// expand replaces $(NAME) references in s with lookup's values, following
// the kubelet's rules: "$$" is a literal "$", and a reference to an
// undefined variable, or one without a closing parenthesis, stays as
// written.
func expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += end + 2
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
