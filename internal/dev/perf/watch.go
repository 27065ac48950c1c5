package perf

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// secretWatch follows one Secret on one cluster, so that a measurement
// learns of a change when the apiserver sends it rather than at the next
// poll.
type secretWatch struct {
	cluster, name, key string
	w                  watch.Interface
}

// watchSecret opens a watch on namespace/name of cluster, reporting the
// value of key.
func (s *Stack) watchSecret(ctx context.Context, cluster, name, key string) (*secretWatch, error) {
	w, err := s.typed[cluster].CoreV1().Secrets(Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("watching Secret %s on %s: %w", name, cluster, err)
	}
	return &secretWatch{cluster: cluster, name: name, key: key, w: w}, nil
}

// waitFor returns when the Secret's key first holds want, at the time the
// event arrived. It never prints the value.
func (sw *secretWatch) waitFor(ctx context.Context, want string, timeout time.Duration) (time.Time, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-sw.w.ResultChan():
			if !ok {
				return time.Time{}, fmt.Errorf("the watch on Secret %s on %s closed", sw.name, sw.cluster)
			}
			if s, isSecret := ev.Object.(*corev1.Secret); isSecret && string(s.Data[sw.key]) == want {
				return time.Now(), nil
			}
		case <-timer.C:
			return time.Time{}, fmt.Errorf("the Secret %s on %s did not take the new %s within %s", sw.name, sw.cluster, sw.key, timeout)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

func (sw *secretWatch) stop() { sw.w.Stop() }

// waitAll waits on every watch in parallel and returns the latest arrival.
func waitAll(ctx context.Context, watches []*secretWatch, want string, timeout time.Duration) (time.Time, error) {
	type result struct {
		at  time.Time
		err error
	}
	results := make(chan result, len(watches))
	for _, sw := range watches {
		go func() {
			at, err := sw.waitFor(ctx, want, timeout)
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
