// Package desired computes, as pure functions, the objects a WebhookInstall
// asks for: Secrets, Deployments, Services and CRD conversion stanzas. No
// client, no clock: table tests prove them without an API server.
package desired
