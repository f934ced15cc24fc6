//go:build race

package reexec

const raceEnabled = true
