package controllers_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var _ = Describe("The metrics endpoint", func() {
	It("refuses unauthenticated and unauthorized scrapes, and serves a ServiceAccount bound to the documented reader role", func(ctx context.Context) {
		ns := createNamespace(ctx)
		prometheus := serviceAccountToken(ctx, ns, "prometheus")
		stranger := serviceAccountToken(ctx, ns, "stranger")
		Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "metrics-reader-"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "hookwright-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "prometheus"}},
		})).To(Succeed())

		// controller-runtime serves a self-signed certificate; what is under
		// test is who may read, not the certificate.
		httpClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec
		scrape := func(token string) (int, string) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+metricsAddr+"/metrics", nil)
			Expect(err).NotTo(HaveOccurred())
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := httpClient.Do(req)
			if err != nil {
				return 0, err.Error()
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}
		Eventually(func() int { code, _ := scrape(""); return code }).Should(Equal(http.StatusUnauthorized))
		Eventually(func() int { code, _ := scrape(stranger); return code }).Should(Equal(http.StatusForbidden))
		Eventually(func(g Gomega) {
			code, body := scrape(prometheus)
			g.Expect(code).To(Equal(http.StatusOK))
			g.Expect(body).To(ContainSubstring("hookwright_claims_refused_total"))
		}).Should(Succeed())
	})
})

// serviceAccountToken creates a ServiceAccount and a short-lived token for it.
func serviceAccountToken(ctx context.Context, ns, name string) string {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	Expect(k8s.Create(ctx, sa)).To(Succeed())
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(3600))}}
	Expect(k8s.SubResource("token").Create(ctx, sa, request)).To(Succeed())
	return request.Status.Token
}
