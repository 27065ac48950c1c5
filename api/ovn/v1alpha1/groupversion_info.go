// Package v1alpha1 holds the ovn.openstack.c5c3.io/v1alpha1 API: the OVN central databases and the OVN chassis that run on hypervisor nodes.
//
// +kubebuilder:object:generate=true
// +groupName=ovn.openstack.c5c3.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "ovn.openstack.c5c3.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
