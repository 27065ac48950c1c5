package targetcluster

import (
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Children is where an owner's children live: the management cluster, or
// the compute cluster its targetClusterRef names. Every child is written
// through Apply and removed through Delete, with the ownership mechanics
// that cluster needs, and an object the owner does not control is never
// touched.
type Children struct {
	// Client writes children.
	Client client.Client
	// Reader reads the live state of children and inputs. Locally it is
	// the cached client, whose watches drive the next pass.
	Reader client.Reader
	// Remote is set for a compute cluster.
	Remote *Remote
}

// LocalChildren places children on the management cluster.
func LocalChildren(c client.Client) *Children { return &Children{Client: c, Reader: c} }

// ChildrenOn places children on a compute cluster.
func ChildrenOn(remote *Remote) *Children {
	return &Children{Client: remote.Client, Reader: remote.Reader, Remote: remote}
}

// Claim marks obj as owner's child the way its cluster needs: a controller
// reference locally, ownership labels remotely.
func (c *Children) Claim(owner, obj, live client.Object, scheme *runtime.Scheme) error {
	if c.Remote != nil {
		return ClaimRemote(owner, obj, live, scheme)
	}
	return ClaimLocal(owner, obj, live, scheme)
}

// ChildrenFor returns where the children of an object whose
// targetClusterRef names cluster live: local for "", else the resolved
// compute cluster. It returns the *UnavailableError to report when that
// cluster cannot be used, also on a nil Registry, which means the operator
// runs without compute clusters.
func (r *Registry) ChildrenFor(cluster string, local *Children) (*Children, error) {
	if cluster == "" {
		return local, nil
	}
	if r == nil {
		return nil, &UnavailableError{Cluster: cluster, Reason: "this operator runs without compute clusters"}
	}
	remote, err := r.Resolve(cluster)
	if err != nil {
		return nil, err
	}
	return ChildrenOn(remote), nil
}
