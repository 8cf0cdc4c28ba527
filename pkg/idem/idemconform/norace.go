//go:build !race

package idemconform

const raceEnabled = false
