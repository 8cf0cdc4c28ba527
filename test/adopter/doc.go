// Package adopter is a module of its own that uses pkg/idem as another
// team would: it imports only the published packages (pkg/idem,
// pkg/idem/idemhttp, pkg/money) and the test store (pkg/idem/idemtest),
// nothing of this repository's application. Its tests run the library's
// documented scenarios from the outside.
package adopter
