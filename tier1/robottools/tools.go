package robottools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/prompttext"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/emoji"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1"
)

// Robot is what the tools ask of xiaozhi's admin API (*xiaozhi.Client).
type Robot interface {
	SetHeadAngles(ctx context.Context, deviceID string, yaw, pitch, speed int) error
	SetState(ctx context.Context, deviceID, state string) error
	Songs(ctx context.Context) ([]string, error)
	TakePhoto(ctx context.Context, deviceID, question string) error
}

// Voice is the Tier1Slim tools' logic the MCP tools share (*tier1.Handler).
type Voice interface {
	MemoryLookup(ctx context.Context, query string) string
	PlaySong(ctx context.Context, deviceID, name string) string
	RememberPerson(name, fact, session string) string
}

// Person is someone in the room.
type Person struct {
	// Name is who they are (a roster name or a recognised identity).
	Name string
	// Description is their one-line roster description; "" for none.
	Description string
}

// Room says who is in a robot's room now (perception's state and the
// household).
type Room interface {
	People(ctx context.Context, deviceID string) ([]Person, error)
}

// Calendar gives today's events, one line each.
type Calendar interface {
	Today(ctx context.Context) ([]string, error)
}

// Bounds of the look tool, in degrees.
const (
	MaxYaw   = 90
	MaxPitch = 30
	// headSpeed is the wake-word turn's speed.
	headSpeed = 200
	// songsListed is the most song names list_songs returns.
	songsListed = 50
	// photoPoll is how often take_photo looks for its photo's description.
	photoPoll = 250 * time.Millisecond
	// defaultQuestion is take_photo's question when the model asks none.
	defaultQuestion = "Describe what you see."
)

// Texts of the tools' own answers.
const (
	KidModeCamera = "The camera is off in kid mode."
	NoRobot       = "No robot is known for this conversation yet; it is set by the next spoken turn."
	NoFreshPhoto  = "The robot could not see anything fresh right now."
)

// toolNames are the tools, in the order they are listed.
var toolNames = []string{"look", "set_state", "set_mood", "take_photo", "list_songs", "play_song", "who_is_here", "today",
	"memory_lookup", "remember"}

func knownTool(name string) bool { return slices.Contains(toolNames, name) }

// Moods are set_mood's moods, each shown by the allowed emoji of the same
// place in emoji.Allowed: 😊 😆 😢 😮 🤔 😠 😐 😍 😴.
var Moods = [len(emoji.Allowed)]string{"happy", "laughing", "sad", "surprised", "thinking", "angry", "neutral", "loving", "sleepy"}

// Arguments of the tools.
type (
	lookArgs struct {
		Yaw   int `json:"yaw" jsonschema:"degrees to turn the head left (negative) or right (positive), -90 to 90; 0 faces forward"`
		Pitch int `json:"pitch" jsonschema:"degrees to tilt the head down (negative) or up (positive), -30 to 30; 0 is level"`
	}
	stateArgs struct {
		State string `json:"state" jsonschema:"the state to enter"`
	}
	moodArgs struct {
		Mood string `json:"mood" jsonschema:"the mood the face shows"`
	}
	photoArgs struct {
		Question string `json:"question,omitempty" jsonschema:"what to look for in the picture (optional)"`
	}
	noArgs   struct{}
	songArgs struct {
		Name string `json:"name" jsonschema:"the song's name, as list_songs gives it or close to it"`
	}
	queryArgs struct {
		Query string `json:"query" jsonschema:"words to search the household's memory for"`
	}
	rememberArgs struct {
		Person string `json:"person" jsonschema:"the person the fact is about, by name"`
		Fact   string `json:"fact" jsonschema:"the fact to remember, one short sentence"`
	}
)

// addTools registers every tool on the MCP server.
func (s *Server) addTools() {
	look := schema[lookArgs]()
	look.Properties["yaw"].Minimum, look.Properties["yaw"].Maximum = ptr(-MaxYaw), ptr(MaxYaw)
	look.Properties["pitch"].Minimum, look.Properties["pitch"].Maximum = ptr(-MaxPitch), ptr(MaxPitch)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "look", InputSchema: look,
		Description: "Turn the robot's head to look somewhere: yaw left/right and pitch down/up in degrees. " +
			"Use it to look at someone or something, or yaw 0 pitch 0 to face forward again."}, s.look)
	state := schema[stateArgs]()
	state.Properties["state"].Enum = anys(xiaozhi.States)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "set_state", InputSchema: state,
		Description: "Put the robot in a state: idle, talk, story_time (for telling a story), security (watching the room), " +
			"sleep or dance."}, s.setState)
	mood := schema[moodArgs]()
	mood.Properties["mood"].Enum = anys(Moods[:])
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "set_mood", InputSchema: mood,
		Description: "Set the mood the robot's face shows with your next spoken reply in this conversation: " +
			strings.Join(Moods[:], ", ") + ". Call it before you answer; it lasts for that one reply."}, s.setMood)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "take_photo",
		Description: "Take a photo with the robot's camera and get a description of what it sees. " +
			"Refused while kid mode is on."}, s.takePhoto)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list_songs",
		Description: "List the songs the robot can play."}, s.listSongs)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "play_song",
		Description: "Play a song on the robot by name; the closest song in its catalogue is played."}, s.playSong)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "who_is_here",
		Description: "Who the robot sees or hears in the room right now, with a short description of each person it knows."}, s.whoIsHere)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "today",
		Description: "Today's events on the household calendar."}, s.today)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "memory_lookup",
		Description: "Search what the household has told the robot before (facts about people, past conversations)."}, s.memoryLookup)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "remember",
		Description: "Remember a fact about a person in the household. A fact about a child is held until a grown-up " +
			"checks it; the answer says so."}, s.remember)
}

// schema is the input schema inferred from T's fields and their tags.
func schema[T any]() *jsonschema.Schema {
	sc, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("robottools: schema of %T: %v", *new(T), err))
	}
	return sc
}

func ptr(n int) *float64 { f := float64(n); return &f }

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// answer is a tool's successful result.
func answer(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// failed is a tool error the model reads.
func failed(text string) *mcp.CallToolResult {
	r := answer(text)
	r.IsError = true
	return r
}

// Cap of a whole tool answer made of outside text (tier1's result cap).
var resultCap = prompttext.Cap{Runes: tier1.ResultCap}

// robot returns the call's robot, or the tool error saying there is none.
func (s *Server) robot(ctx context.Context) (string, *mcp.CallToolResult) {
	c := callOf(ctx)
	switch {
	case s.cfg.Robot == nil:
		return "", failed(tier1.NoXiaozhi)
	case c.device == "":
		return "", failed(NoRobot)
	}
	return c.device, nil
}

func (s *Server) look(ctx context.Context, _ *mcp.CallToolRequest, in lookArgs) (*mcp.CallToolResult, any, error) {
	if in.Yaw < -MaxYaw || in.Yaw > MaxYaw || in.Pitch < -MaxPitch || in.Pitch > MaxPitch {
		return failed(fmt.Sprintf("yaw must be from -%d to %d and pitch from -%d to %d degrees", MaxYaw, MaxYaw, MaxPitch, MaxPitch)), nil, nil
	}
	dev, bad := s.robot(ctx)
	if bad != nil {
		return bad, nil, nil
	}
	if err := s.cfg.Robot.SetHeadAngles(ctx, dev, in.Yaw, in.Pitch, headSpeed); err != nil {
		return s.robotFailed("look", err), nil, nil
	}
	return answer(fmt.Sprintf("Looking at yaw %d, pitch %d.", in.Yaw, in.Pitch)), nil, nil
}

func (s *Server) setState(ctx context.Context, _ *mcp.CallToolRequest, in stateArgs) (*mcp.CallToolResult, any, error) {
	if !slices.Contains(xiaozhi.States, in.State) {
		return failed("state must be one of " + strings.Join(xiaozhi.States, ", ")), nil, nil
	}
	dev, bad := s.robot(ctx)
	if bad != nil {
		return bad, nil, nil
	}
	if err := s.cfg.Robot.SetState(ctx, dev, in.State); err != nil {
		return s.robotFailed("set_state", err), nil, nil
	}
	return answer("The robot is now in state " + in.State + "."), nil, nil
}

// MoodNeedsTurn is set_mood's error for a standing token before any
// conversation has had a turn.
const MoodNeedsTurn = "No conversation has spoken with the robot yet; set the mood after the next spoken turn."

func (s *Server) setMood(ctx context.Context, _ *mcp.CallToolRequest, in moodArgs) (*mcp.CallToolResult, any, error) {
	i := slices.Index(Moods[:], in.Mood)
	if i < 0 {
		return failed("mood must be one of " + strings.Join(Moods[:], ", ")), nil, nil
	}
	if !s.tables.setMood(callOf(ctx).grant, emoji.Allowed[i], s.clock.Now()) {
		return failed(MoodNeedsTurn), nil, nil
	}
	return answer("The face will look " + in.Mood + " when you speak."), nil, nil
}

// robotFailed logs a failed xiaozhi call and says so to the model without
// the details (an address, a token).
func (s *Server) robotFailed(tool string, err error) *mcp.CallToolResult {
	s.log.Warn("robot tool failed", "tool", tool, "error", err)
	switch {
	case errors.Is(err, xiaozhi.ErrNoDevice):
		return failed("The robot is not connected right now (" + tool + " failed).")
	case errors.Is(err, xiaozhi.ErrDisabled):
		return failed(tier1.NoXiaozhi)
	}
	return failed("The robot did not respond (" + tool + " failed).")
}

func (s *Server) takePhoto(ctx context.Context, _ *mcp.CallToolRequest, in photoArgs) (*mcp.CallToolResult, any, error) {
	if s.cfg.KidMode != nil && s.cfg.KidMode() {
		callOf(ctx).outcome = outcomeRefused
		return failed(KidModeCamera), nil, nil
	}
	dev, bad := s.robot(ctx)
	if bad != nil {
		return bad, nil, nil
	}
	q := prompttext.Line(in.Question, prompttext.Question)
	if q == "" {
		q = defaultQuestion
	}
	asked := s.clock.Now()
	if err := s.cfg.Robot.TakePhoto(ctx, dev, q); err != nil {
		s.log.Warn("take_photo: the robot did not take a photo; answering with the freshest one", "error", err)
	} else if desc, ok := s.awaitPhoto(ctx, asked); ok {
		return answer(desc), nil, nil
	}
	if desc, ok := tier1.FreshPhoto(s.cfg.Vision); ok {
		return answer(prompttext.Line(desc, prompttext.Answer)), nil, nil
	}
	return failed(NoFreshPhoto), nil, nil
}

// awaitPhoto waits, at most PhotoWait, for a description of a photo
// taken since asked.
func (s *Server) awaitPhoto(ctx context.Context, asked time.Time) (string, bool) {
	deadline := asked.Add(s.cfg.PhotoWait)
	for s.cfg.Vision != nil {
		desc, age, ok := s.cfg.Vision.Freshest()
		now := s.clock.Now()
		if ok && desc != "" && !now.Add(-age).Before(asked) {
			return prompttext.Line(desc, prompttext.Answer), true
		}
		if !now.Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return "", false
		case <-s.clock.After(min(photoPoll, deadline.Sub(now))):
		}
	}
	return "", false
}

func (s *Server) listSongs(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
	if s.cfg.Robot == nil {
		return failed(tier1.NoXiaozhi), nil, nil
	}
	files, err := s.cfg.Robot.Songs(ctx)
	if err != nil {
		return s.robotFailed("list_songs", err), nil, nil
	}
	if len(files) == 0 {
		return answer(tier1.EmptyCatalogue), nil, nil
	}
	names := make([]string, 0, min(len(files), songsListed))
	for _, f := range files[:min(len(files), songsListed)] {
		names = append(names, prompttext.Line(f, prompttext.Name))
	}
	out := "Songs: " + strings.Join(names, ", ")
	if more := len(files) - len(names); more > 0 {
		out += fmt.Sprintf(" (and %d more)", more)
	}
	return answer(out), nil, nil
}

func (s *Server) playSong(ctx context.Context, _ *mcp.CallToolRequest, in songArgs) (*mcp.CallToolResult, any, error) {
	if s.cfg.Voice == nil {
		return failed(tier1.NoXiaozhi), nil, nil
	}
	dev, bad := s.robot(ctx)
	if bad != nil {
		return bad, nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, tier1.ShortBudget)
	defer cancel()
	res := prompttext.Line(s.cfg.Voice.PlaySong(ctx, dev, in.Name), resultCap)
	if !strings.HasPrefix(res, "playing ") {
		return failed(res), nil, nil
	}
	return answer(res), nil, nil
}

func (s *Server) whoIsHere(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
	dev := callOf(ctx).device
	switch {
	case s.cfg.Room == nil:
		return failed("The robot cannot tell who is in the room."), nil, nil
	case dev == "":
		return failed(NoRobot), nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, tier1.ShortBudget)
	defer cancel()
	people, err := s.cfg.Room.People(ctx, dev)
	var lines []string
	for _, p := range people {
		if line := prompttext.Line(p.Name, prompttext.Name); line != "" {
			if d := prompttext.Line(p.Description, prompttext.Description); d != "" {
				line += " — " + d
			}
			lines = append(lines, line)
		}
	}
	return s.listing("who_is_here", err, "In the room: ", lines, "Nobody the robot recognises is in the room right now.",
		prompttext.Scene), nil, nil
}

func (s *Server) today(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
	if s.cfg.Calendar == nil {
		return failed("The household calendar is not set up."), nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, tier1.ShortBudget)
	defer cancel()
	events, err := s.cfg.Calendar.Today(ctx)
	var lines []string
	for _, e := range events {
		if l := prompttext.Line(e, prompttext.Event); l != "" {
			lines = append(lines, l)
		}
	}
	return s.listing("today", err, "Today: ", lines, "Nothing is on the calendar today.", prompttext.Calendar), nil, nil
}

// listing answers lines (outside text Line made safe) after prefix, cut
// at c, or none when there are no lines; err, from the source of the
// lines, is logged and answered as the tool's failure.
func (s *Server) listing(tool string, err error, prefix string, lines []string, none string, c prompttext.Cap) *mcp.CallToolResult {
	switch {
	case err != nil:
		s.log.Warn("robot tool failed", "tool", tool, "error", err)
		return failed("The robot cannot answer " + tool + " right now.")
	case len(lines) == 0:
		return answer(none)
	}
	return answer(prompttext.Cut(prefix+strings.Join(lines, "; "), c))
}

func (s *Server) memoryLookup(ctx context.Context, _ *mcp.CallToolRequest, in queryArgs) (*mcp.CallToolResult, any, error) {
	if s.cfg.Voice == nil {
		return failed(tier1.NoMemories), nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, tier1.ShortBudget)
	defer cancel()
	res := prompttext.Line(s.cfg.Voice.MemoryLookup(ctx, in.Query), resultCap)
	if res == tier1.EmptyQuery {
		return failed(res), nil, nil
	}
	return answer(res), nil, nil
}

func (s *Server) remember(ctx context.Context, _ *mcp.CallToolRequest, in rememberArgs) (*mcp.CallToolResult, any, error) {
	if s.cfg.Voice == nil {
		return failed(tier1.RememberFailed), nil, nil
	}
	res := s.cfg.Voice.RememberPerson(in.Person, in.Fact, callOf(ctx).grant.session)
	switch res {
	case tier1.NoPerson, tier1.EmptyFact, tier1.RememberFailed:
		return failed(res), nil, nil
	}
	return answer(prompttext.Line(res, resultCap)), nil, nil
}
