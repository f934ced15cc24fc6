//go:build !race

package acptest

const raceEnabled = false
