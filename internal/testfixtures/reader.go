package testfixtures

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reader reads widgets at the non-storage version v2 (every read converts
// through the webhook) until halted, counting successes and failures:
// the measure of "no conversion ever failed".
type Reader struct {
	OK, Failed atomic.Int64
	mu         sync.Mutex
	firstErrs  []string
	stop       chan struct{}
	stopOnce   sync.Once
	wg         sync.WaitGroup
}

// StartReaders starts workers that alternate a LIST of the namespace and
// a GET of one of names, every 20 ms each.
func StartReaders(ctx context.Context, c client.Client, group, ns string, names []string, workers int) *Reader {
	r := &Reader{stop: make(chan struct{})}
	for w := range workers {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-r.stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				var err error
				if i%2 == 0 {
					list := &unstructured.UnstructuredList{}
					list.SetAPIVersion(group + "/v2")
					list.SetKind("WidgetList")
					err = c.List(ctx, list, client.InNamespace(ns))
				} else {
					u := &unstructured.Unstructured{}
					u.SetAPIVersion(group + "/v2")
					u.SetKind("Widget")
					err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: names[(w+i)%len(names)]}, u)
				}
				if err != nil {
					r.Failed.Add(1)
					r.mu.Lock()
					if len(r.firstErrs) < 5 {
						r.firstErrs = append(r.firstErrs, err.Error())
					}
					r.mu.Unlock()
					continue
				}
				r.OK.Add(1)
			}
		}()
	}
	return r
}

// Halt stops the workers and waits for them; calling it again is harmless.
func (r *Reader) Halt() {
	r.stopOnce.Do(func() { close(r.stop) })
	r.wg.Wait()
}

// FirstErrors are up to five of the failures, for the test's message.
func (r *Reader) FirstErrors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.firstErrs...)
}
