// Command perception-load measures the perception ingest of the bridge
// over loopback (spec §11, §12).
//
// It posts a realistic mix of firmware events to POST
// /api/perception/event from parallel keep-alive connections while one or
// more SSE clients follow GET /api/perception/feed, and scrapes /metrics
// before and after the measured phase. It then prints:
//
//   - events sent, failures (transport errors, answers other than 204),
//     duration and events/s;
//   - request latency p50/p90/p99/max in µs, exact (every request's
//     latency is kept and sorted), plus the bridge's own in-handler mean
//     from dotty_request_duration_seconds{endpoint="perception_event"};
//   - per consumer the share of its trigger events it received
//     (1 − dotty_perception_dropped_total delta / trigger events sent: each
//     consumer subscribes only to its trigger events);
//   - per SSE client the share of the posted events it received and
//     whether it was evicted (fell_behind);
//   - for a bridge it started itself: its CPU time during the measured
//     phase (µs per event) and its VmRSS/VmHWM afterwards; and the
//     harness's own CPU time, since both share the machine.
//
// With no -url it builds ./cmd/zeroclaw-bridge (or runs -bin), starts it on
// a free loopback port with its files in a temporary directory, the sound
// turner on (so all five event consumers run) and XIAOZHI_HOST pointing at
// an in-process fake xiaozhi admin API that answers every robot call, then
// stops it (SIGTERM, SIGKILL after 10 s) and removes the directory.
//
// Usage (from the repository root):
//
//	go run ./cmd/perception-load -n 200000 -c 8
//	go run ./cmd/perception-load -c 8 -pipeline 8          # raw HTTP/1.1, 8 in flight per connection
//	go run ./cmd/perception-load -rate 20000 -n 100000     # open-loop pacing
//	go run ./cmd/perception-load -url http://127.0.0.1:8080 -json
//
// The default client is net/http with a tuned Transport (one keep-alive
// connection per worker, like the xiaozhi relay). -client raw writes
// pre-encoded HTTP/1.1 requests straight to the socket and parses the
// answers by hand, which costs the load generator far less CPU; on a
// two-core machine, where the harness and the bridge share the cores, that
// leaves more of them to the bridge. -pipeline > 1 implies -client raw.
package main
