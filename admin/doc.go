// Package admin serves the localhost-only /admin/* routes (kid mode, smart mode, robot
// state, persona files) and applies mode changes live. It arrives with issue 6.
package admin
