// Package kstatustest checks that an Anvil kind's status reads right to
// kstatus (sigs.k8s.io/cli-utils), the library Flux, Argo CD and kubectl
// health checks use: a settled object is Current, a waiting one
// InProgress, one stopped on invalid input Failed.
package kstatustest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	"github.com/anvil/anvil/internal/controller/conditions"
	"github.com/anvil/anvil/internal/controller/flow"
)

// Compute returns kstatus's verdict on obj as the apiserver would serve it.
func Compute(obj runtime.Object) (*status.Result, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return status.Compute(&unstructured.Unstructured{Object: content})
}

// pass is one pass's outcome to summarise and the verdict kstatus must
// reach on it.
type pass struct {
	name string
	// steps runs before Summarize: it records the step conditions.
	steps func(c flow.Conditions, steps []string) error
	want  status.Status
}

// passes walks an object through every state and back: settled, waiting,
// transient error, invalid input, settled again.
var passes = []pass{
	{"settled", allTrue, status.CurrentStatus},
	{"waiting on an input", func(c flow.Conditions, steps []string) error {
		err := flow.Wait(steps[0], "InputMissing", 1, "the input is not there yet")
		c.Record(steps[0], err)
		return err
	}, status.InProgressStatus},
	{"invalid input", func(c flow.Conditions, steps []string) error {
		last := steps[len(steps)-1]
		err := flow.Invalid(last, "InputInvalid", errors.New("the input is malformed"))
		c.Record(last, err)
		return err
	}, status.FailedStatus},
	{"settled after the fix", allTrue, status.CurrentStatus},
	{"a transient error on a new generation", func(c flow.Conditions, steps []string) error {
		err := fmt.Errorf("the apiserver did not answer")
		c.Record(steps[0], err)
		return err
	}, status.InProgressStatus},
}

// allTrue reports every step True.
func allTrue(c flow.Conditions, steps []string) error {
	for _, s := range steps {
		c.Set(s, metav1.ConditionTrue, "Done", "done")
	}
	return nil
}

// Walk runs obj, whose status is st, through every state with the kind's
// own Summary, and fails t where kstatus reads it wrong. Each pass bumps
// the generation, as the user's spec change that starts it would.
func Walk(t *testing.T, obj client.Object, st *anvilmeta.CommonStatus, sum conditions.Summary) {
	t.Helper()
	for _, p := range passes {
		obj.SetGeneration(obj.GetGeneration() + 1)
		err := p.steps(flow.Conditions{List: &st.Conditions, Generation: obj.GetGeneration()}, sum.Steps)
		conditions.Summarize(st, obj.GetGeneration(), err, sum)
		res, cerr := Compute(obj)
		if cerr != nil {
			t.Fatalf("%s: kstatus: %v", p.name, cerr)
		}
		if res.Status != p.want {
			t.Errorf("%s: kstatus reads %s (%s), want %s; conditions %+v", p.name, res.Status, res.Message, p.want, st.Conditions)
		}
	}
}

// Await polls obj through c until kstatus reads want, and returns the
// result; it fails t after 30 seconds.
func Await(t *testing.T, c client.Client, obj client.Object, want status.Status) *status.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	var last *status.Result
	for {
		if err := c.Get(ctx, key, obj); err == nil {
			if res, err := Compute(obj); err == nil {
				if last = res; res.Status == want {
					return res
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("kstatus never read %s %s as %s; last %+v", obj.GetObjectKind().GroupVersionKind().Kind, key, want, last)
			return nil
		case <-pollTick():
		}
	}
}

// pollTick paces Await: kstatus is read from the apiserver, not watched.
func pollTick() <-chan time.Time { return time.After(200 * time.Millisecond) }
