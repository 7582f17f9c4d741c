package conversion

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Func converts one object to another version of the same kind.
//
// It owns in: it may modify in and return it, which avoids a copy. It need
// not set apiVersion nor care about metadata other than labels and
// annotations: the kit sets apiVersion and restores every other metadata
// field from the input, as the API server would.
type Func func(in *unstructured.Unstructured) (*unstructured.Unstructured, error)

// Converter holds the conversion functions of one group and kind, like a
// runtime.Scheme holds types. Register everything before serving: a
// Converter is read concurrently by the webhook and is not locked.
type Converter struct {
	gk    schema.GroupKind
	pairs map[versionPair]Func
	hub   string
	// hubAPIVersion is boxed once, not per converted object.
	hubAPIVersion any
	toHub         map[string]Func
	fromHub       map[string]Func
}

type versionPair struct{ from, to string }

// NewConverter returns an empty Converter for group and kind, e.g.
// NewConverter("stable.example.com", "CronTab").
func NewConverter(group, kind string) *Converter {
	if kind == "" {
		panic("conversion: NewConverter needs a kind")
	}
	return &Converter{
		gk:      schema.GroupKind{Group: group, Kind: kind},
		pairs:   map[versionPair]Func{},
		toHub:   map[string]Func{},
		fromHub: map[string]Func{},
	}
}

// GroupKind is the group and kind this Converter converts.
func (c *Converter) GroupKind() schema.GroupKind { return c.gk }

// AddPair registers fn to convert fromVersion to toVersion directly. A
// direct pair wins over a route through the hub. It panics on a duplicate,
// like http.ServeMux.Handle: registration mistakes are programming errors
// best found at start-up, not on the first request.
func (c *Converter) AddPair(fromVersion, toVersion string, fn Func) *Converter {
	c.mustVersions(fromVersion, toVersion)
	if fromVersion == toVersion {
		panic(fmt.Sprintf("conversion: %s: AddPair(%q, %q): a version converts to itself without a function", c.gk, fromVersion, toVersion))
	}
	p := versionPair{fromVersion, toVersion}
	if _, dup := c.pairs[p]; dup {
		panic(fmt.Sprintf("conversion: %s: a conversion from %s to %s is already registered", c.gk, fromVersion, toVersion))
	}
	c.pairs[p] = mustFunc(c.gk, fn)
	return c
}

// AddHub names the hub version: every spoke converts to and from it, so
// n versions need 2(n-1) functions instead of n(n-1).
func (c *Converter) AddHub(hubVersion string) *Converter {
	c.mustVersions(hubVersion)
	if c.hub != "" && c.hub != hubVersion {
		panic(fmt.Sprintf("conversion: %s already has hub %s, cannot add hub %s", c.gk, c.hub, hubVersion))
	}
	if _, spoke := c.toHub[hubVersion]; spoke {
		panic(fmt.Sprintf("conversion: %s: %s is a spoke, it cannot be the hub", c.gk, hubVersion))
	}
	c.hub = hubVersion
	c.hubAPIVersion = joinAPIVersion(c.gk.Group, hubVersion)
	return c
}

// AddSpoke registers the conversions between version and the hub. Spokes
// may be added before AddHub; converting through a hub that was never
// named fails with an "unsupported" error.
func (c *Converter) AddSpoke(version string, toHub, fromHub Func) *Converter {
	c.mustVersions(version)
	if version == c.hub {
		panic(fmt.Sprintf("conversion: %s: %s is the hub, it cannot be a spoke", c.gk, version))
	}
	if _, dup := c.toHub[version]; dup {
		panic(fmt.Sprintf("conversion: %s: spoke %s is already registered", c.gk, version))
	}
	c.toHub[version] = mustFunc(c.gk, toHub)
	c.fromHub[version] = mustFunc(c.gk, fromHub)
	return c
}

// route is the chain of functions from one version to another: nil for
// identity, one function for a direct pair or a hub end, two through the
// hub. ok is false when no route is registered.
func (c *Converter) route(from, to string) (first, second Func, ok bool) {
	if from == to {
		return nil, nil, true
	}
	if fn, found := c.pairs[versionPair{from, to}]; found {
		return fn, nil, true
	}
	if c.hub == "" {
		return nil, nil, false
	}
	switch {
	case from == c.hub:
		fn, found := c.fromHub[to]
		return fn, nil, found
	case to == c.hub:
		fn, found := c.toHub[from]
		return fn, nil, found
	default:
		up, upOK := c.toHub[from]
		down, downOK := c.fromHub[to]
		return up, down, upOK && downOK
	}
}

func (c *Converter) mustVersions(versions ...string) {
	for _, v := range versions {
		if v == "" {
			panic(fmt.Sprintf("conversion: %s: empty version", c.gk))
		}
	}
}

func mustFunc(gk schema.GroupKind, fn Func) Func {
	if fn == nil {
		panic(fmt.Sprintf("conversion: %s: nil conversion function", gk))
	}
	return fn
}
