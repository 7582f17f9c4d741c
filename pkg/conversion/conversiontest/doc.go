// Package conversiontest helps authors test conversion functions without
// an API server: RoundTrip proves that converting to another version and
// back loses nothing, and RandomObject makes random valid objects from a
// CRD's schema to feed it, from a table test or a Go fuzz test:
//
//	func FuzzCronTab(f *testing.F) {
//		f.Add(int64(1))
//		f.Fuzz(func(t *testing.T, seed int64) {
//			r := rand.New(rand.NewPCG(uint64(seed), 0))
//			obj := &unstructured.Unstructured{Object: conversiontest.RandomObject(r, v2Schema)}
//			obj.SetAPIVersion("stable.example.com/v2")
//			obj.SetKind("CronTab")
//			obj.SetName("fuzz")
//			conversiontest.RoundTrip(t, converter, obj, []string{"v1", "v2"})
//		})
//	}
package conversiontest
