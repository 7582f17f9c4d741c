package memlimit

import (
	"strings"
	"testing"
)

func TestFromEnv(t *testing.T) {
	const mi = int64(1 << 20)
	for _, tc := range []struct {
		name      string
		env       map[string]string
		want      int64
		wantSet   bool
		wantError string
	}{
		{name: "the downward API's bytes", env: map[string]string{EnvVar: "603979776"}, want: 576 * mi / 100 * 90, wantSet: true},
		{name: "a quantity, by hand", env: map[string]string{EnvVar: "576Mi"}, want: 576 * mi / 100 * 90, wantSet: true},
		{name: "no limit given", env: map[string]string{}},
		{name: "zero", env: map[string]string{EnvVar: "0"}},
		{name: "an admin's GOMEMLIMIT wins", env: map[string]string{EnvVar: "576Mi", "GOMEMLIMIT": "300MiB"}},
		{name: "not a quantity", env: map[string]string{EnvVar: "576MB of RAM"}, wantError: "HOOKWRIGHT_MEMORY_LIMIT=\"576MB of RAM\" is not a memory quantity"},
		{name: "negative", env: map[string]string{EnvVar: "-1Gi"}, wantError: "is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, set, err := FromEnv(func(k string) string { return tc.env[k] })
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || set != tc.wantSet {
				t.Fatalf("FromEnv = %d, %v; want %d, %v", got, set, tc.want, tc.wantSet)
			}
		})
	}
}
