// Package toolmods holds the test that keeps the tools `make test` builds
// from Go modules (the control plane, opm, promtool) on the module
// versions the tests themselves compile.
package toolmods
