// Package adopter is a module of its own that uses pkg/idem as another
// team would: it imports only the published packages (pkg/idem,
// pkg/idem/idemhttp, pkg/money) and the library's test store
// (pkg/idem/idemtest), nothing of this repository's application, and its
// go.mod requires the library alone. Its tests run the library's
// documented scenarios from the outside.
package adopter
