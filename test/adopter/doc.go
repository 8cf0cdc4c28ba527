// Package adopter is a module of its own that uses pkg/idem as another
// team would: it imports only the published packages (pkg/idem,
// pkg/idem/idemhttp, pkg/money), the library's test store
// (pkg/idem/idemtest) and its conformance harness (pkg/idem/idemconform,
// a module of its own), nothing of this repository's application. Its
// tests run the library's documented scenarios from the outside, and
// its package appsync is an adapter the library does not have (an AWS
// AppSync direct Lambda resolver), written from the public API alone,
// which passes the library's conformance suite as the library's own ways
// in do.
package adopter
