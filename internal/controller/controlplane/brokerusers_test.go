package controlplane

import (
	"reflect"
	"testing"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
)

func TestBrokerUsersToDelete(t *testing.T) {
	a := c5c3v1alpha1.BrokerUser{Cluster: "compute-a", User: "nova-compute-compute-a", AdminSecret: "broker-admin"}
	b := c5c3v1alpha1.BrokerUser{Cluster: "compute-b", User: "nova-compute-compute-b", AdminSecret: "broker-admin"}
	old := c5c3v1alpha1.BrokerUser{Cluster: "compute-c", User: "nova-compute-compute-c", AdminSecret: "old-admin"}
	both := map[string]bool{"compute-a": true, "compute-b": true, "compute-c": true}
	cases := []struct {
		name  string
		users []c5c3v1alpha1.BrokerUser
		keep  map[string]bool
		admin string
		want  []c5c3v1alpha1.BrokerUser
	}{
		{name: "nothing recorded", keep: both, admin: "broker-admin"},
		{name: "every cluster stays", users: []c5c3v1alpha1.BrokerUser{a, b}, keep: both, admin: "broker-admin"},
		{name: "a cluster left", users: []c5c3v1alpha1.BrokerUser{a, b}, keep: map[string]bool{"compute-a": true}, admin: "broker-admin",
			want: []c5c3v1alpha1.BrokerUser{b}},
		{name: "the reference was removed, or the ControlPlane is deleted", users: []c5c3v1alpha1.BrokerUser{a, b}, keep: both,
			want: []c5c3v1alpha1.BrokerUser{a, b}},
		{name: "created through another admin Secret", users: []c5c3v1alpha1.BrokerUser{a, old}, keep: both, admin: "broker-admin",
			want: []c5c3v1alpha1.BrokerUser{old}},
		{name: "PerCluster off: no cluster kept", users: []c5c3v1alpha1.BrokerUser{a}, admin: "broker-admin",
			want: []c5c3v1alpha1.BrokerUser{a}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := BrokerUsersToDelete(c.users, c.keep, c.admin); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestRecordBrokerUser(t *testing.T) {
	a := c5c3v1alpha1.BrokerUser{Cluster: "compute-a", User: "nova-compute-compute-a", AdminSecret: "one"}
	a2 := c5c3v1alpha1.BrokerUser{Cluster: "compute-a", User: "nova-compute-compute-a", AdminSecret: "two"}
	b := c5c3v1alpha1.BrokerUser{Cluster: "compute-b", User: "nova-compute-compute-b", AdminSecret: "one"}
	cases := []struct {
		name  string
		users []c5c3v1alpha1.BrokerUser
		add   c5c3v1alpha1.BrokerUser
		want  []c5c3v1alpha1.BrokerUser
	}{
		{name: "first", add: a, want: []c5c3v1alpha1.BrokerUser{a}},
		{name: "sorted by cluster", users: []c5c3v1alpha1.BrokerUser{b}, add: a, want: []c5c3v1alpha1.BrokerUser{a, b}},
		{name: "replaces its cluster's entry", users: []c5c3v1alpha1.BrokerUser{a, b}, add: a2, want: []c5c3v1alpha1.BrokerUser{a2, b}},
		{name: "the same again changes nothing", users: []c5c3v1alpha1.BrokerUser{a, b}, add: a, want: []c5c3v1alpha1.BrokerUser{a, b}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := append([]c5c3v1alpha1.BrokerUser(nil), c.users...)
			if got := recordBrokerUser(c.users, c.add); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			if !reflect.DeepEqual(in, c.users) {
				t.Fatal("the input was changed")
			}
		})
	}
}

func TestBrokerAdminName(t *testing.T) {
	ref := &anvilmeta.LocalObjectReference{Name: "broker-admin"}
	remote := func(creds c5c3v1alpha1.ComputeCredentials, admin *anvilmeta.LocalObjectReference) *c5c3v1alpha1.ControlPlane {
		cp := &c5c3v1alpha1.ControlPlane{}
		cp.Spec.Services.Nova = &c5c3v1alpha1.NovaServiceSpec{RemoteCompute: &c5c3v1alpha1.RemoteComputeSpec{Credentials: creds, BrokerAdminSecretRef: admin}}
		return cp
	}
	cases := []struct {
		name string
		cp   *c5c3v1alpha1.ControlPlane
		want string
	}{
		{name: "no nova", cp: &c5c3v1alpha1.ControlPlane{}},
		{name: "nova without remote computes", cp: &c5c3v1alpha1.ControlPlane{Spec: c5c3v1alpha1.ControlPlaneSpec{Services: c5c3v1alpha1.ServicesSpec{Nova: &c5c3v1alpha1.NovaServiceSpec{}}}}},
		{name: "shared credentials ignore the reference", cp: remote(c5c3v1alpha1.SharedCredentials, ref)},
		{name: "per cluster without the reference", cp: remote(c5c3v1alpha1.PerClusterCredentials, nil)},
		{name: "per cluster with the reference", cp: remote(c5c3v1alpha1.PerClusterCredentials, ref), want: "broker-admin"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := brokerAdminName(c.cp); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}
