package perf

import (
	"bytes"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/anvil/anvil/internal/novaconfig"
)

// secretWatch follows one Secret on one cluster, so that a measurement
// learns of a change when the apiserver sends it rather than at the next
// poll.
type secretWatch struct {
	cluster, name string
	w             watch.Interface
}

// want is what a measurement waits for in a watched Secret: a key and a
// test of its value. Nothing prints the value.
type want struct {
	key   string
	holds func([]byte) bool
}

// equal waits for key to hold exactly value.
func equal(key, value string) want {
	return want{key, func(b []byte) bool { return string(b) == value }}
}

// inConfig waits for the contract's nova-compute.conf to hold part.
func inConfig(part string) want {
	return want{novaconfig.KeyConfig, func(b []byte) bool { return bytes.Contains(b, []byte(part)) }}
}

// watchSecret opens a watch on a Secret of the measured namespace.
func (s *Stack) watchSecret(ctx context.Context, cluster, name string) (*secretWatch, error) {
	return openSecretWatch(ctx, s.typed[cluster], Namespace, cluster, name)
}

// openSecretWatch opens a watch on namespace/name through cs; cluster
// names it in errors.
func openSecretWatch(ctx context.Context, cs kubernetes.Interface, namespace, cluster, name string) (*secretWatch, error) {
	w, err := cs.CoreV1().Secrets(namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("watching Secret %s on %s: %w", name, cluster, err)
	}
	return &secretWatch{cluster: cluster, name: name, w: w}, nil
}

// waitFor returns when the Secret first holds w, at the time the event
// arrived.
func (sw *secretWatch) waitFor(ctx context.Context, w want, timeout time.Duration) (time.Time, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-sw.w.ResultChan():
			if !ok {
				return time.Time{}, fmt.Errorf("the watch on Secret %s on %s closed", sw.name, sw.cluster)
			}
			if s, isSecret := ev.Object.(*corev1.Secret); isSecret && w.holds(s.Data[w.key]) {
				return time.Now(), nil
			}
		case <-timer.C:
			return time.Time{}, fmt.Errorf("the Secret %s on %s did not take the new %s within %s", sw.name, sw.cluster, w.key, timeout)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

func (sw *secretWatch) stop() { sw.w.Stop() }

// waitAll waits on every watch in parallel and returns the latest arrival.
func waitAll(ctx context.Context, watches []*secretWatch, w want, timeout time.Duration) (time.Time, error) {
	type result struct {
		at  time.Time
		err error
	}
	results := make(chan result, len(watches))
	for _, sw := range watches {
		go func() {
			at, err := sw.waitFor(ctx, w, timeout)
			results <- result{at, err}
		}()
	}
	var last time.Time
	var firstErr error
	for range watches {
		r := <-results
		if r.err != nil && firstErr == nil {
			firstErr = r.err
		}
		if r.at.After(last) {
			last = r.at
		}
	}
	return last, firstErr
}
