package placement

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/targetcluster"
)

// unavailable is a registry whose clusters never resolve.
type unavailable struct{}

func (unavailable) Resolve(name string) (*targetcluster.Remote, error) {
	return nil, &targetcluster.UnavailableError{Cluster: name, Reason: "it is not registered"}
}

// pool is a placed NovaCompute owner named name.
func pool(name string) *novav1alpha1.NovaCompute {
	p := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openstack"}}
	p.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: "compute-a"}
	return p
}

// The teardown gives a cluster up only once both the owner has been
// deleting and this process has seen the cluster fail for the window.
func TestTeardownAbandonsOnlyAfterBothWindows(t *testing.T) {
	s := runtime.NewScheme()
	if err := novav1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	recorder := events.NewFakeRecorder(10)
	td := &Teardown{Registry: unavailable{}, Scheme: s, Recorder: recorder, Clock: clk}
	owner := pool("c1")
	// The owner has been deleting for a long time, but this process only
	// now sees the cluster fail: the per-process window starts now.
	owner.DeletionTimestamp = &metav1.Time{Time: start.Add(-time.Hour)}

	steps := []struct {
		at          time.Duration
		wantRelease bool
	}{
		{at: 0, wantRelease: false},
		{at: 4 * time.Minute, wantRelease: false},
		{at: 5 * time.Minute, wantRelease: true},
	}
	for _, st := range steps {
		clk.SetTime(start.Add(st.at))
		res, err := td.Run(t.Context(), owner, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Release != st.wantRelease {
			t.Fatalf("at +%s: release = %v, want %v", st.at, res.Release, st.wantRelease)
		}
		if !res.Release && (res.RequeueAfter != UnavailableRequeue || !targetcluster.IsUnavailable(res.Unavailable)) {
			t.Errorf("at +%s: waiting result = %+v", st.at, res)
		}
	}
	select {
	case ev := <-recorder.Events:
		if want := "Warning " + ReasonRemoteChildrenAbandoned; len(ev) < len(want) || ev[:len(want)] != want {
			t.Errorf("event = %q", ev)
		}
	default:
		t.Error("no RemoteChildrenAbandoned event")
	}

	// A fresh deletion waits for its own window even if the cluster has
	// been failing for long.
	fresh := pool("c2")
	fresh.DeletionTimestamp = &metav1.Time{Time: clk.Now()}
	if res, _ := td.Run(t.Context(), fresh, nil); res.Release {
		t.Error("released a deletion younger than the window")
	}
}
