//go:build race

package acptest

const raceEnabled = true
