// Package v1alpha1 holds the neutron.openstack.c5c3.io/v1alpha1 API: the Neutron metadata agent that serves instance metadata on hypervisor nodes.
//
// +kubebuilder:object:generate=true
// +groupName=neutron.openstack.c5c3.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "neutron.openstack.c5c3.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
