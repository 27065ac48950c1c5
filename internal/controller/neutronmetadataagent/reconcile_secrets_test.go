package neutronmetadataagent

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
)

// TestCheckExpandable: only a '$' is refused, since oslo.config expands
// nothing else in an environment value, and the refusal names the Secret
// and key but never the value.
func TestCheckExpandable(t *testing.T) {
	agent := &neutronv1alpha1.NeutronMetadataAgent{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "openstack"}}
	for name, tc := range map[string]struct {
		value   string
		refused bool
	}{
		"plain":               {value: "Zq8vN3rT5wY1pL7x"},
		"backslash and quote": {value: `a\b"c'd`},
		"percent and braces":  {value: "%(x)s{y}"},
		"dollar alone":        {value: "secret$", refused: true},
		"interpolation":       {value: "pre${DEFAULT.host}post", refused: true},
		"doubled dollar":      {value: "pa$$word", refused: true},
	} {
		t.Run(name, func(t *testing.T) {
			err := checkExpandable(agent, "copy", "shared_secret", []byte(tc.value))
			if (err != nil) != tc.refused {
				t.Fatalf("refused = %v, want %v (%v)", err != nil, tc.refused, err)
			}
			if err == nil {
				return
			}
			if flow.ReasonOf(err) != neutronv1alpha1.SharedSecretUnusableReason {
				t.Errorf("reason %q, want %s", flow.ReasonOf(err), neutronv1alpha1.SharedSecretUnusableReason)
			}
			msg := err.Error()
			if strings.Contains(msg, tc.value) {
				t.Error("the message quotes the secret's value")
			}
			if !strings.Contains(msg, "openstack/copy") || !strings.Contains(msg, "shared_secret") {
				t.Error("the message does not name the Secret and its key")
			}
		})
	}
}
