package roundtrip_test

import (
	"slices"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/dev/testenv"
)

// auditMark is where the management cluster's audit log ends now.
func auditMark(t *testing.T) int64 {
	t.Helper()
	mark, err := env.Management.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	return mark
}

// checkWrittenOnceEachWay fails for a child the operator stored more than
// twice since mark: a round trip needs at most one write of a child for
// the change and one for the way back, and anything more is a write a
// settled pass sent again. Every child kind of the subject in its
// namespace counts, so a write to another object's children, which should
// be idle meanwhile, counts too.
func checkWrittenOnceEachWay(t *testing.T, c client.Client, s subject, mark int64) {
	t.Helper()
	var resources []string
	for _, gvk := range s.children {
		m, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatal(err)
		}
		resources = append(resources, m.Resource.Group+"/"+m.Resource.Resource)
	}
	events, _, err := env.Management.AuditWrites(mark)
	if err != nil {
		t.Fatal(err)
	}
	repeated := testenv.RepeatedWrites(events, 2, func(e testenv.AuditEvent) bool {
		return e.Namespace == s.key.Namespace && slices.Contains(resources, e.Group+"/"+e.Resource)
	})
	for key, writes := range repeated {
		t.Errorf("the operator stored %s %d times in one round trip, where one write each way is enough:\n%s",
			key, len(writes), testenv.FormatAuditEvents(writes))
	}
}
