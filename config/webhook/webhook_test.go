package webhook

import "testing"

func TestValidatingCoversNova(t *testing.T) {
	cfgs, err := Validating()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range cfgs {
		for _, w := range c.Webhooks {
			if w.ClientConfig.Service != nil && w.ClientConfig.Service.Path != nil &&
				*w.ClientConfig.Service.Path == "/validate-nova-openstack-c5c3-io-v1alpha1-nova" {
				found = true
			}
		}
	}
	if !found {
		t.Error("no validating webhook for Nova")
	}
}
