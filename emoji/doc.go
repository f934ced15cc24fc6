// Package emoji is the bridge's reply text pipeline, bridge.py's
// text_utils in Go: the nine allowed reply emoji and the 😐 fallback, the
// emoji prefix guarantee, the clean-up for speech, the extra-emoji strip,
// the sentence cap, the three-tier content filter and the emoji→emotion
// maps.
//
// Two orders apply, as in bridge.py. A buffered reply runs
// filter → prefix → clean → strip → cap (Pipeline.Buffered). A streamed
// reply runs, per agent delta, clean → filter (a hit sends the replacement
// once and blocks the rest) → prefix on the first non-blank delta →
// running sentence cap, and at the end clean → filter → prefix → strip →
// cap over the whole text (Stream).
//
// Every length and position counts code points, and "whitespace" is
// Python's str.isspace(): Unicode White_Space plus U+001C–U+001F.
package emoji
