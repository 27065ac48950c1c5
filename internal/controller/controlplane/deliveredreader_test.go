package controlplane

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cacheStub is the reader behind a deliveredReader; it records what was
// asked and answers every Secret with "cached".
type cacheStub struct {
	client.Reader
	asked []string
}

func (c *cacheStub) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.asked = append(c.asked, key.String())
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return errors.New("not a Secret")
	}
	s.Data = map[string][]byte{"transport_url": []byte("cached")}
	return nil
}

func TestDeliveredReader(t *testing.T) {
	written := map[string]map[string][]byte{"cp-nova-remote-messaging": {"transport_url": []byte("written")}}
	cases := []struct {
		name      string
		key       client.ObjectKey
		obj       client.Object
		want      string
		wantAsked bool
	}{
		{"a Secret written this pass", client.ObjectKey{Namespace: "openstack", Name: "cp-nova-remote-messaging"}, &corev1.Secret{}, "written", false},
		{"another Secret", client.ObjectKey{Namespace: "openstack", Name: "cp-bus"}, &corev1.Secret{}, "cached", true},
		{"the same name in another namespace", client.ObjectKey{Namespace: "other", Name: "cp-nova-remote-messaging"}, &corev1.Secret{}, "cached", true},
		{"not a Secret", client.ObjectKey{Namespace: "openstack", Name: "cp-nova-remote-messaging"}, &corev1.ConfigMap{}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stub := &cacheStub{}
			r := deliveredReader{Reader: stub, namespace: "openstack", secrets: written}
			_ = r.Get(context.Background(), tc.key, tc.obj)
			if s, ok := tc.obj.(*corev1.Secret); ok && string(s.Data["transport_url"]) != tc.want {
				t.Errorf("read %q, want %q", s.Data["transport_url"], tc.want)
			}
			if got := len(stub.asked) > 0; got != tc.wantAsked {
				t.Errorf("asked the cache: %v, want %v", got, tc.wantAsked)
			}
		})
	}
	// What the caller does with the answer never changes what was written.
	s := &corev1.Secret{}
	_ = deliveredReader{Reader: &cacheStub{}, namespace: "openstack", secrets: written}.Get(context.Background(),
		client.ObjectKey{Namespace: "openstack", Name: "cp-nova-remote-messaging"}, s)
	s.Data["transport_url"][0] = 'X'
	if string(written["cp-nova-remote-messaging"]["transport_url"]) != "written" {
		t.Error("the caller's answer shares bytes with the pass's record")
	}
}
