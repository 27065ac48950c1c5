package controlplane_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
)

// BenchmarkIntegrationMirrorPropagation measures the time from a change of
// a source Secret (the service password) until the mirror on every compute
// cluster carries it, for 1, 2 and 4 clusters. The direct-write
// sub-benchmark is the baseline: one Secret update on one compute cluster,
// measured in the same run, so the ratio says what the pipeline adds.
//
//	make bench
func BenchmarkIntegrationMirrorPropagation(b *testing.B) {
	e := startOperator(b)
	ctx := context.Background()
	clusters := []string{"compute-a", "compute-b", "compute-c", "compute-d"}

	b.Run("direct-write", func(b *testing.B) {
		c := e.ComputeCluster("compute-a").Client
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bench-direct", Namespace: testNamespace}}
		if err := c.Create(ctx, s); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			s.Data = map[string][]byte{"password": fmt.Appendf(nil, "v%d", i)}
			if err := c.Update(ctx, s); err != nil {
				b.Fatal(err)
			}
		}
	})

	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			name := fmt.Sprintf("bench%d", n)
			newControlPlane(b, name, true)
			waitNovaReady(b, name, c5c3v1alpha1.NovaReadyReason)
			for _, cluster := range clusters[:n] {
				newPool(b, name, name+"-"+cluster, cluster)
			}
			waitNovaReady(b, name, c5c3v1alpha1.NovaReadyReason)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				value := fmt.Sprintf("bench-password-%d", i)
				putSecret(b, name+"-nova-password", map[string]string{"password": value})
				for _, cluster := range clusters[:n] {
					err := wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
						s := &corev1.Secret{}
						err := e.ComputeCluster(cluster).Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name + "-nova-compute-config"}, s)
						return err == nil && string(s.Data["password"]) == value, nil
					})
					if err != nil {
						b.Fatalf("the mirror on %s did not follow", cluster)
					}
				}
			}
		})
	}
}
