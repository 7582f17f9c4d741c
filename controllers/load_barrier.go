package controllers

import (
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The trust probe is also a barrier (trustprobe.go): once the API server
// answers through a probe CRD's configuration, it has applied every CRD
// write that completed before that configuration was written, whoever's
// CRD it was. One probe therefore proves the caBundle writes of every
// install made before it, not only those of the install that ran it.
//
// loadedGate uses that in a rotation storm: when another install's probe
// was written after this install's last caBundle write on each of its
// CRDs, the API server has loaded those caBundles, and a read through the
// install's own CRDs (which carry the bundle the gate needs) proves the
// pods are trusted through it. The probe is spared: two writes of a probe
// CRD, each making the API server rebuild that CRD's handler, and the
// dry runs that wait for it to load them. Without such a later probe
// (the first rotations of a storm, any lone rotation, a restarted
// operator) the gate probes as before.
//
// Both records are this process's own: a write or a probe of another
// process (a previous leader) proves nothing here.

// loadBarrier is the newest write time a probe has proven loaded.
type loadBarrier struct {
	mu     sync.Mutex
	proven time.Time // every CRD write completed before this was loaded
}

// crdLoadBarrier is the barrier every probe of this process advances.
var crdLoadBarrier loadBarrier

// prove records that the API server answered through a probe CRD
// configuration whose write was sent at written.
func (b *loadBarrier) prove(written time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if written.After(b.proven) {
		b.proven = written
	}
}

// covers: a write that completed at completed was loaded.
func (b *loadBarrier) covers(completed time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return completed.Before(b.proven)
}

// conversionWrite is Hookwright's last conversion write to a CRD: the
// resourceVersion it returned and when its response arrived.
type conversionWrite struct {
	resourceVersion string
	completed       time.Time
}

// conversionWrites holds, per CRD name, this process's last conversion
// write (configureConversion). An entry outlives its CRD harmlessly: a
// recreated CRD has another resourceVersion.
var conversionWrites sync.Map // string -> conversionWrite

func noteConversionWrite(crd, resourceVersion string, completed time.Time) {
	conversionWrites.Store(crd, conversionWrite{resourceVersion: resourceVersion, completed: completed})
}

// loadedByBarrier: the CRD is as Hookwright last wrote it (no write
// since, by anyone: same resourceVersion), and a probe written after that
// write completed has been answered through, so the API server serves
// the CRD with that write's configuration.
func loadedByBarrier(b *loadBarrier, crd *apiextensionsv1.CustomResourceDefinition) bool {
	v, ok := conversionWrites.Load(crd.Name)
	if !ok {
		return false
	}
	w := v.(conversionWrite)
	return w.resourceVersion != "" && w.resourceVersion == crd.ResourceVersion && b.covers(w.completed)
}
