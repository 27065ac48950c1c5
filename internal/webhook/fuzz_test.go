package webhook

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// fuzzPassword is the password the seeds put into URLs. Wherever it stands
// only as a URL's password, no admission error may quote it.
const fuzzPassword = "Fz-pass-7Q"

// fuzzValidator runs validate on objects decoded from fuzzed JSON, on
// create (old nil) and on an update from the seed. Whatever the input,
// validation must not panic, must give the same answer twice, must name a
// field under spec or metadata for every error, and must not quote a URL's
// password. Each seed is the valid object with one URL given a password,
// so the fuzzer starts from inputs that reach every rule.
func fuzzValidator[T any](f *testing.F, valid func() *T, passwordSeeds []func(*T), validate func(obj, old *T) field.ErrorList) {
	f.Helper()
	add := func(obj *T) {
		raw, err := json.Marshal(obj)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	add(valid())
	for _, mutate := range passwordSeeds {
		obj := valid()
		mutate(obj)
		add(obj)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		obj := new(T)
		if err := json.Unmarshal(raw, obj); err != nil {
			return
		}
		for _, old := range []*T{nil, valid()} {
			errs := validate(obj, old)
			if again := validate(obj, old); fmt.Sprint(again) != fmt.Sprint(errs) {
				t.Fatalf("two validations differ:\n%v\n%v", errs, again)
			}
			checkErrors(t, raw, errs)
		}
	})
}

// checkErrors holds every error of one validation to the rules above.
func checkErrors(t *testing.T, raw []byte, errs field.ErrorList) {
	t.Helper()
	for _, e := range errs {
		if !strings.HasPrefix(e.Field, "spec") && !strings.HasPrefix(e.Field, "metadata") {
			t.Errorf("error %q names no field under spec or metadata", e.Error())
		}
	}
	// The check holds when the password stands in the input only where a
	// URL keeps one; elsewhere, in a name say, echoing it is fine.
	in := string(raw)
	if n := strings.Count(in, fuzzPassword); n == 0 || n != strings.Count(in, ":"+fuzzPassword+"@") {
		return
	}
	for _, e := range errs {
		// The message names the field only: a failure must not print
		// the password it found.
		if strings.Contains(e.Error(), fuzzPassword) {
			t.Errorf("the error on %s quotes a URL's password", e.Field)
		}
	}
}

// withPassword puts user:fuzzPassword into a URL.
func withPassword(url string) string {
	return strings.Replace(url, "://", "://anvil:"+fuzzPassword+"@", 1)
}

func FuzzValidateControlPlane(f *testing.F) {
	fuzzValidator(f, validControlPlane, []func(*c5c3v1alpha1.ControlPlane){
		func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Keystone.InternalEndpoint = withPassword(cp.Spec.Services.Keystone.InternalEndpoint)
		},
		func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Keystone.PublicEndpoint = withPassword(cp.Spec.Services.Keystone.PublicEndpoint)
		},
		func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Placement.PublicEndpoint = withPassword(cp.Spec.Services.Placement.PublicEndpoint)
		},
	}, ValidateControlPlane)
}

func FuzzValidateNova(f *testing.F) {
	fuzzValidator(f, validNova, []func(*novav1alpha1.Nova){
		func(n *novav1alpha1.Nova) { n.Spec.KeystoneEndpoint = withPassword(n.Spec.KeystoneEndpoint) },
		func(n *novav1alpha1.Nova) {
			n.Spec.RemoteCompute.KeystoneEndpoint = withPassword(n.Spec.RemoteCompute.KeystoneEndpoint)
		},
	}, func(n, _ *novav1alpha1.Nova) field.ErrorList { return ValidateNova(n) })
}

func FuzzValidateNovaCompute(f *testing.F) {
	fuzzValidator(f, validPool, nil, ValidateNovaCompute)
}

func FuzzValidateNeutronMetadataAgent(f *testing.F) {
	fuzzValidator(f, validMetadataAgent, []func(*neutronv1alpha1.NeutronMetadataAgent){
		func(a *neutronv1alpha1.NeutronMetadataAgent) {
			a.Spec.NovaMetadata.Host = "anvil:" + fuzzPassword + "@nova"
		},
	}, ValidateNeutronMetadataAgent)
}

func FuzzValidateOVNCentral(f *testing.F) {
	fuzzValidator(f, validCentral, nil, ValidateOVNCentral)
}

func FuzzValidateOVNChassis(f *testing.F) {
	fuzzValidator(f, validChassis, nil, ValidateOVNChassis)
}
