// Package tier1 owns what xiaozhi's Tier1Slim provider calls: POST
// /api/voice/escalate for the tools its small local model reaches for
// (memory_lookup, think_hard, take_photo, play_song, remember_person), and
// the memory writes, /api/voice/remember, /api/voice/memory_log and
// /api/voice/remember_person. Its sub-package memstore owns the writes into
// ZeroClaw's brain.db (a queue, a single writer, an fsynced journal), the
// reads memory_lookup makes and per-person memory.
//
// Per-person facts pass the household's kid-safety gate (People): only a
// roster-known adult's fact is readable at once; any other is held for a
// grown-up's review and reaches no prompt until approved.
//
// Escalations always answer 200 {"result": …} with bridge.py's exact
// strings, within the caller's budget: each short tool is bounded at 4.5 s
// (the caller waits 5 s) and think_hard at 28 s (it waits 30 s). Memory
// writes answer once journalled (204, or remember_person's 200 with the
// gate's decision) and reach brain.db from the writer; a full queue
// answers 503 and counts dotty_memory_writes_dropped_total.
//
// It depends on small interfaces, not on other features: Memory
// (*memstore.Store), Vision (the vision cache's freshest photo), Xiaozhi
// (the robot's admin API) and People (perception's Household), all given
// in Config.
package tier1
