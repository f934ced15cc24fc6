package admin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// execCmd runs a command and returns its combined output.
func execCmd(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput() // #nosec G204 -- systemctl with a unit name from the operator's configuration
	return string(out), err
}

var (
	modelName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9./:_-]+$`) })
	modelLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\s*)model\s*=\s*"[^"]*"(.*)$`) })
	fallback  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\s*)fallback\s*=\s*"[^"]*"(.*)$`) })
)

// model is POST /admin/model.
func (h *Handler) model(c echo.Context) error {
	daemon, model, err := parseStrings(c, "daemon", "model")
	if err != nil {
		return err
	}
	if daemon != "voice" && daemon != "discord" {
		return httpapi.NewError(http.StatusBadRequest, "daemon must be one of ['discord', 'voice']")
	}
	path, unit, err := h.setModel(daemon, model, true)
	if err != nil {
		return err
	}
	return httpapi.WriteJSON(c, http.StatusOK, struct {
		OK      bool   `json:"ok"`
		Daemon  string `json:"daemon"`
		Model   string `json:"model"`
		Config  string `json:"config"`
		Restart string `json:"restart"`
	}{true, daemon, model, path, unit})
}

// setModel rewrites daemon's config.toml for model and, with restart, restarts it: the
// voice daemon is our own agent child; discord is its systemd unit. Errors
// are *httpapi.APIError with the spec's statuses; nothing is written unless
// every edit succeeds.
func (h *Handler) setModel(daemon, model string, restart bool) (path, unit string, err error) {
	// Read, edit, write: two edits at once would each start from the same
	// old file and the second would undo the first.
	h.modelMu.Lock()
	defer h.modelMu.Unlock()
	if !modelName().MatchString(model) {
		return "", "", httpapi.NewError(http.StatusBadRequest, "model id has invalid chars")
	}
	path, unit = h.cfg.VoiceConfig, h.cfg.VoiceUnit
	if daemon == "discord" {
		path, unit = h.cfg.DiscordConfig, h.cfg.DiscordUnit
	}
	b, rerr := os.ReadFile(path) // #nosec G304 -- ZEROCLAW_VOICE_CFG / ZEROCLAW_DISCORD_CFG, chosen by daemon name, never by the caller
	if errors.Is(rerr, fs.ErrNotExist) || path == "" {
		return "", "", httpapi.NewError(http.StatusNotFound, "config not found: "+path)
	}
	if rerr != nil {
		return "", "", httpapi.NewError(http.StatusInternalServerError, "could not read "+path+": "+rerr.Error())
	}
	var out string
	if daemon == "voice" && h.cfg.LocalProfileKey != "" {
		key := h.cfg.CloudProfileKey
		if model == h.cfg.DefaultModel {
			key = h.cfg.LocalProfileKey
		}
		out, err = setProfileModel(string(b), key, model)
	} else {
		out, err = setLegacyModel(string(b), model)
	}
	if err != nil {
		return "", "", err
	}
	if err := WriteAtomic(path, []byte(out), 0o600); err != nil {
		return "", "", httpapi.NewError(http.StatusInternalServerError, "could not write "+path+": "+err.Error())
	}
	h.log.Info("agent model changed", "daemon", daemon, "model", model, "config", path)
	switch {
	case !restart:
	case daemon == "voice":
		if h.cfg.Agent != nil && !h.cfg.Agent.Restart("model changed to "+model) {
			h.log.Info("no running agent to restart; the next start reads the new model")
		}
	case unit != "":
		h.cfg.RestartUnit(unit)
	}
	return path, unit, nil
}

// section returns the line range [start, end) of the table whose header
// line satisfies isHeader: from the header to the next line starting with
// "[".
func section(lines []string, isHeader func(string) bool) (start, end int, ok bool) {
	for i, l := range lines {
		if isHeader(strings.TrimSpace(l)) {
			end = len(lines)
			for j := i + 1; j < len(lines); j++ {
				if strings.HasPrefix(lines[j], "[") {
					end = j
					break
				}
			}
			return i, end, true
		}
	}
	return 0, 0, false
}

// replaceFirst rewrites the first line in [start, end) matching re.
func replaceFirst(lines []string, start, end int, re *regexp.Regexp, key, value string) bool {
	for i := start; i < end; i++ {
		if m := re.FindStringSubmatch(lines[i]); m != nil {
			lines[i] = fmt.Sprintf(`%s%s = "%s"%s`, m[1], key, value, m[2])
			return true
		}
	}
	return false
}

// setProfileModel is the multi-profile edit: the model line of
// [providers.models."<key>"], then the file's fallback line.
func setProfileModel(doc, key, model string) (string, error) {
	lines := strings.Split(doc, "\n")
	header := `[providers.models."` + key + `"]`
	start, end, ok := section(lines, func(l string) bool { return l == header })
	if !ok {
		return "", httpapi.NewError(http.StatusInternalServerError, "profile section not found: "+header)
	}
	if !replaceFirst(lines, start+1, end, modelLine(), "model", model) {
		return "", httpapi.NewError(http.StatusInternalServerError, "model line not found in profile '"+key+"'")
	}
	if !replaceFirst(lines, 0, len(lines), fallback(), "fallback", key) {
		return "", httpapi.NewError(http.StatusInternalServerError, "[providers].fallback line not found")
	}
	return strings.Join(lines, "\n"), nil
}

// setLegacyModel edits the model line of the first
// [providers.models."custom:…"] section.
func setLegacyModel(doc, model string) (string, error) {
	lines := strings.Split(doc, "\n")
	start, end, ok := section(lines, func(l string) bool {
		return strings.HasPrefix(l, `[providers.models."custom:`) && strings.HasSuffix(l, `"]`)
	})
	if !ok {
		return "", httpapi.NewError(http.StatusInternalServerError, "provider section not found")
	}
	if !replaceFirst(lines, start+1, end, modelLine(), "model", model) {
		return "", httpapi.NewError(http.StatusInternalServerError, "model line not found")
	}
	return strings.Join(lines, "\n"), nil
}

// configMatches reports whether the voice config already selects want, in
// the section setModel would edit (and, for profiles, as the fallback).
func (h *Handler) configMatches(doc, want string) bool {
	lines := strings.Split(doc, "\n")
	isHeader := func(l string) bool {
		return strings.HasPrefix(l, `[providers.models."custom:`) && strings.HasSuffix(l, `"]`)
	}
	if h.cfg.LocalProfileKey != "" {
		key := h.cfg.CloudProfileKey
		if want == h.cfg.DefaultModel {
			key = h.cfg.LocalProfileKey
		}
		if !fallbackIs(lines, key) {
			return false
		}
		header := `[providers.models."` + key + `"]`
		isHeader = func(l string) bool { return l == header }
	}
	start, end, ok := section(lines, isHeader)
	if !ok {
		return false
	}
	for i := start + 1; i < end; i++ {
		if m := modelValue().FindStringSubmatch(lines[i]); m != nil {
			return m[1] == want
		}
	}
	return false
}

var modelValue = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*model\s*=\s*"([^"]*)"`) })

// fallbackIs reports whether the file's fallback line names key.
func fallbackIs(lines []string, key string) bool {
	for _, l := range lines {
		if fallback().MatchString(l) {
			return strings.Contains(l, `"`+key+`"`)
		}
	}
	return false
}

// ReconcileAgentModel is the start-up reconcile of the ZeroClaw path: when
// the voice config names another model than smart mode's target, it is
// rewritten (before the agent starts, so no restart is needed). A missing
// config or the tier1slim provider does nothing.
func (h *Handler) ReconcileAgentModel(smart bool) {
	if h.Tier1Slim() {
		return
	}
	want := h.cfg.DefaultModel
	if smart {
		want = h.cfg.SmartOn.Model
	}
	b, err := os.ReadFile(h.cfg.VoiceConfig)
	if err != nil {
		h.log.Debug("no voice config to reconcile", "path", h.cfg.VoiceConfig, "error", err)
		return
	}
	if h.configMatches(string(b), want) {
		return
	}
	if _, _, err := h.setModel("voice", want, false); err != nil { // the agent has not started yet
		h.log.Warn("start-up model reconcile failed; the agent keeps its configured model", "model", want, "error", err)
		return
	}
	h.log.Info("voice agent model reconciled with smart mode", "smart_mode", smart, "model", want)
}
