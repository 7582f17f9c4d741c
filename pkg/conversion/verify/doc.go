// Package verify checks conversions against sample YAMLs, as the CRD
// conversion KEP advises ("directories containing sample yamls of an object
// in various versions"): every sample is converted to every other served
// version and back, must come back exactly, and must equal its counterpart
// sample (same namespace and name) in the other version when there is one.
// It drives the kit in process or a running webhook, and backs the
// `hookwright verify` command.
package verify
