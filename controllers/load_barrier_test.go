package controllers

import (
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLoadedByBarrier(t *testing.T) {
	written := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	crd := func(name, rv string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
	}
	cases := []struct {
		name     string
		probedAt []time.Time // probe writes the API server answered through
		crd      *apiextensionsv1.CustomResourceDefinition
		want     bool
	}{
		{"a probe written after the write completed", []time.Time{written.Add(time.Millisecond)}, crd("a.example.com", "10"), true},
		{"the newest of several probes counts", []time.Time{written.Add(time.Second), written.Add(-time.Second)}, crd("a.example.com", "10"), true},
		{"no probe since", nil, crd("a.example.com", "10"), false},
		{"only a probe written before the write completed", []time.Time{written.Add(-time.Millisecond)}, crd("a.example.com", "10"), false},
		{"a probe sent as the write completed", []time.Time{written}, crd("a.example.com", "10"), false},
		{"someone wrote the CRD since", []time.Time{written.Add(time.Second)}, crd("a.example.com", "11"), false},
		{"a CRD this process never wrote", []time.Time{written.Add(time.Second)}, crd("b.example.com", "10"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conversionWrites.Clear()
			t.Cleanup(conversionWrites.Clear)
			noteConversionWrite("a.example.com", "10", written)
			b := &loadBarrier{}
			for _, at := range tc.probedAt {
				b.prove(at)
			}
			if got := loadedByBarrier(b, tc.crd); got != tc.want {
				t.Errorf("loadedByBarrier = %v, want %v", got, tc.want)
			}
		})
	}
}
