// Package certs is Hookwright's pure crypto: issuing CAs and serving
// certificates, checking them against a policy and a Service's names,
// building trust bundles, and fingerprints. It imports the standard library
// only, so every decision about a certificate is testable in microseconds
// without a Kubernetes client.
package certs
