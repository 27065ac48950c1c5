package openstack

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/placement/v1/resourceproviders"
	"github.com/gophercloud/gophercloud/v2/openstack/placement/v1/traits"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// ResourceProvider is one Placement resource provider.
type ResourceProvider struct {
	UUID, Name string
	Generation int
}

// Placement manages traits and reads resource providers.
type Placement interface {
	// EnsureTrait creates a custom trait; an existing one is fine.
	EnsureTrait(ctx context.Context, name string) error
	// ListTraits lists the traits whose names start with prefix.
	ListTraits(ctx context.Context, prefix string) ([]string, error)
	// ListResourceProviders lists providers, of one name when name is set.
	ListResourceProviders(ctx context.Context, name string) ([]ResourceProvider, error)
	// ProviderTraits returns a provider's traits and its generation.
	ProviderTraits(ctx context.Context, uuid string) ([]string, int, error)
	// SetProviderTraits replaces a provider's traits; generation guards
	// against a concurrent writer, which fails with a conflict.
	SetProviderTraits(ctx context.Context, uuid string, generation int, names []string) error
	// AllocationCandidates returns the providers Placement would offer
	// for resources (such as "VCPU:1"): only members of the aggregate
	// memberOf, and only the tree of the provider inTree, when each is
	// set. A provider among them is one the scheduler can pick.
	AllocationCandidates(ctx context.Context, resources, memberOf, inTree string) ([]string, error)
}

var _ Placement = (*Session)(nil)

// EnsureTrait implements Placement. It asks first and creates only a
// missing trait: every settled pass ensures its pool's traits, and a
// settled pass writes nothing, to Placement either.
func (s *Session) EnsureTrait(ctx context.Context, name string) error {
	err := traits.Get(ctx, s.placementAt(), name).ExtractErr()
	if err == nil {
		return nil
	}
	if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return wrap("placement: read trait", err)
	}
	return wrap("placement: create trait", traits.Create(ctx, s.placementAt(), name).ExtractErr())
}

// DeleteTrait deletes a custom trait. It is not part of Placement, since no
// controller deletes a trait that operators may have put elsewhere; test
// cleanup uses it. Placement refuses to delete a trait a provider still has.
func (s *Session) DeleteTrait(ctx context.Context, name string) error {
	return wrap("placement: delete trait", traits.Delete(ctx, s.placementAt(), name).ExtractErr())
}

// ListTraits implements Placement.
func (s *Session) ListTraits(ctx context.Context, prefix string) ([]string, error) {
	opts := traits.ListOpts{}
	if prefix != "" {
		opts.Name = "startswith:" + prefix
	}
	var out []string
	err := traits.List(s.placementAt(), opts).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		list, err := traits.ExtractTraits(p)
		out = append(out, list...)
		return true, err
	})
	return out, wrap("placement: list traits", err)
}

// ListResourceProviders implements Placement.
func (s *Session) ListResourceProviders(ctx context.Context, name string) ([]ResourceProvider, error) {
	var out []ResourceProvider
	err := resourceproviders.List(s.placementAt(), resourceproviders.ListOpts{Name: name}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		list, err := resourceproviders.ExtractResourceProviders(p)
		for _, rp := range list {
			out = append(out, ResourceProvider{UUID: rp.UUID, Name: rp.Name, Generation: rp.Generation})
		}
		return true, err
	})
	return out, wrap("placement: list resource providers", err)
}

// ProviderTraits implements Placement.
func (s *Session) ProviderTraits(ctx context.Context, uuid string) ([]string, int, error) {
	t, err := resourceproviders.GetTraits(ctx, s.placementAt(), uuid).Extract()
	if err != nil {
		return nil, 0, wrap("placement: get provider traits", err)
	}
	return t.Traits, t.ResourceProviderGeneration, nil
}

// SetProviderTraits implements Placement.
func (s *Session) SetProviderTraits(ctx context.Context, uuid string, generation int, names []string) error {
	_, err := resourceproviders.UpdateTraits(ctx, s.placementAt(), uuid, resourceproviders.UpdateTraitsOpts{
		ResourceProviderGeneration: generation, Traits: names,
	}).Extract()
	return wrap("placement: set provider traits", err)
}

// candidatesMicroversion has member_of on allocation candidates (1.21) and
// in_tree (1.31).
const candidatesMicroversion = "1.31"

// AllocationCandidates implements Placement.
func (s *Session) AllocationCandidates(ctx context.Context, resources, memberOf, inTree string) ([]string, error) {
	q := url.Values{"resources": {resources}}
	if memberOf != "" {
		q.Set("member_of", memberOf)
	}
	if inTree != "" {
		q.Set("in_tree", inTree)
	}
	c := *s.placement
	c.Microversion = candidatesMicroversion
	var body struct {
		ProviderSummaries map[string]json.RawMessage `json:"provider_summaries"`
	}
	res, err := c.Get(ctx, c.ServiceURL("allocation_candidates")+"?"+q.Encode(), &body, nil)
	if err != nil {
		return nil, wrap("placement: list allocation candidates", err)
	}
	// gophercloud has read and closed it; closing again is harmless.
	_ = res.Body.Close()
	return slices.Sorted(maps.Keys(body.ProviderSummaries)), nil
}
