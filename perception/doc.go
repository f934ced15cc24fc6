// Package perception is the robot's senses on the bridge side: POST
// /api/perception/event ingests the firmware events xiaozhi's relay
// forwards (faces, sounds, wake words, state changes, head pats), keeps
// per-device state (GET /api/perception/state), fans every event out on a
// bus to the robot-behaviour consumers and to live watchers (GET
// /api/perception/feed, Server-Sent Events), keeps each device's 20 most
// recent events (GET /api/perception/recent) and gives the voice prompt its
// perception block.
//
// # Usage
//
//	svc := perception.New(perception.Config{Robot: xiaozhiClient, …})
//	svc.Routes(e)     // the four routes
//	go svc.Run(ctx)   // the consumers, until ctx ends
//	svc.Ingest(ev)    // also for synthetic events from other packages
//
// # Ordering
//
// Ingest applies an event to its device's state and then publishes it,
// both under one lock, so all events form one total order: every
// subscriber receives events in that order (per-subscriber FIFO), and a
// subscriber handling an event sees state at least as new as that event.
// Delivery is in-process and at most once; a late subscriber gets no
// replay (the recent ring is the only history).
//
// # Back-pressure
//
// Publishing never blocks and never waits on a subscriber: it offers the
// event to each subscriber's bounded queue and moves on. The bus is a
// bridge/fanout.Bus, so the rules below are the same for every fan-out of
// the bridge (the voice turn bus, the dashboard's turn feed).
//
//   - An internal consumer (Bus.Consume, 200 slots) whose queue is full
//     misses the event; the miss is counted in
//     dotty_perception_dropped_total{consumer} and logged at most every
//     10 s. The consumer keeps running.
//   - A watcher (Bus.Watch, 128 slots: one SSE client) whose queue is full
//     is evicted: it is unsubscribed at once, its queue is discarded, its
//     Done channel closes and the feed writes one final "fell_behind" event
//     and ends the stream (EventSource reconnects). Evictions are counted in
//     dotty_sse_evictions_total.
//
// A slow subscriber is a bug in that subscriber; it never slows ingest or
// anyone else.
//
// # Bounds
//
// Device ids come from unauthenticated LAN callers, so everything kept
// per device is bounded: the device table holds at most MaxDevices
// (least recently seen evicted, in constant time, together with its ring,
// its pending abort and — through Senses.Forget — its vision and audio
// entries and long-poll waiters); the rings keep the same bound on their
// own; every event's data is cut to about MaxData bytes when it is made
// (Data: a POSTed event's as it is decoded, a synthetic one's by DataOf),
// before it is stored or broadcast; feed clients are capped at
// MaxFeedClients.
//
// # Consumers
//
// The consumers are one table (consumerTable: name, triggers, enable
// setting, constructor). Each consumer of events (face_greeter with the
// named acknowledger, wake_word_turner, face_lost_aborter, purr_player,
// sound_turner when enabled, the security watch, and scene synthesis with
// its idle tick) is subscribed by New (Bus.SubscribeFunc) and read on its
// own goroutine by the bus's loop (Consumer.Run), its handler given Run's
// ctx; face_identified_refresher runs on a ticker, the idle photographer
// on a random timer.
//
// The camera consumers ask the robot for a photo (or a clip) and wait, in
// process, for its description to reach the vision cache through Camera:
// the security watch runs one loop per device in the security state (so
// at most one per device in the table, stopped with the device), the idle
// photographer now and then photographs an idle room and keeps what is
// new, and scene synthesis turns what the robot sees, hears and who is
// there into one line for the prompt and the dashboard. Their records go
// to daily NDJSON files in JournalDir (bridge/convolog's Daily).
// Gates compare the event's ts with state timestamps, except where the spec
// says wall-clock now (the greeting hours, identity freshness); the clock is
// injectable. Robot actions go through the xiaozhi admin client on their own
// goroutines (at most 16 at once, extra ones dropped with a warning), so a
// slow or failing xiaozhi never stalls a consumer (the camera loops, which
// need the answer, make their calls themselves within the same bound,
// waiting for a slot); failures are logged and never retried. A panic while handling one event is logged and the
// consumer goes on with the next. Run returns only after every consumer
// goroutine, timer and robot call has finished.
package perception
