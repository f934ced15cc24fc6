// Package admin owns the operator's and the family's controls of the
// robot: the localhost-only /admin/* routes (kid mode, smart mode, robot
// state, persona files, the agent's model, the tool allow list), the mode
// state files every other feature reads live (Modes), and the work those
// changes set off after the answer (Handler.Run: the start-up Tier1Slim
// model push, delayed unit restarts).
//
// Every /admin route sits behind the loopback guard: the TCP peer must be
// a loopback address and no proxy header may say otherwise, and the Host
// and any Origin must name this machine (httpapi.Access, the bridge's one
// host and origin rule), so no web page — on the LAN or on the bridge's
// host — can drive it. File
// writes go through os.Root, confined to their directory.
//
// Sub-packages: ui is the dashboard (/ui), xiaozhi the client of
// xiaozhi-esp32-server's admin API that every feature acting on the robot
// uses.
package admin
