package periphery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/prompttext"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

const (
	// weatherQuery is wttr.in's one-line format: condition, temperature,
	// humidity, wind. Kept literally, as bridge.py sent it.
	weatherQuery = "format=%C+%t+%h+%w"
	// weatherUserAgent contains "curl" so wttr.in answers in plain text
	// rather than HTML.
	weatherUserAgent = "zeroclaw-bridge (curl-compatible)"
	// weatherMaxBody bounds the body read; the one-liner is ~40 bytes.
	weatherMaxBody = 4 << 10
	// weatherRetryBase is the first retry delay after a failure.
	weatherRetryBase = 60 * time.Second
)

// errWeatherRejected marks a body that is not a weather reading.
var errWeatherRejected = errors.New("weather answer rejected")

// weatherURL is the request URL for the configured location.
func (p *Periphery) weatherURL() string {
	return p.cfg.WeatherURL + "/" + url.PathEscape(p.cfg.WeatherLocation) + "?" + weatherQuery
}

// fetchWeather does one bounded GET and returns the accepted text.
func (p *Periphery) fetchWeather(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.weatherTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.weatherURL(), nil)
	if err != nil {
		return "", fmt.Errorf("weather request: %w", err)
	}
	req.Header.Set("User-Agent", weatherUserAgent)
	resp, err := p.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("weather get: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, weatherMaxBody))
	if err != nil {
		return "", fmt.Errorf("weather read: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("weather get: status %d", resp.StatusCode)
	}
	report := strings.TrimSpace(string(body))
	switch {
	case report == "":
		return "", fmt.Errorf("%w: empty", errWeatherRejected)
	case strings.Contains(report, "Unknown"), strings.Contains(report, "Sorry"):
		return "", fmt.Errorf("%w: %q", errWeatherRejected, text.Truncate(report, text.Cut{Max: 80, Mark: "…"}))
	case strings.Contains(strings.ToLower(report), "<html"):
		return "", fmt.Errorf("%w: html page", errWeatherRejected)
	}
	return prompttext.Line(report, prompttext.Weather), nil // it stands in every voice prompt's context line
}

// refreshWeather fetches once and stores a good reading. failures is the
// streak length before this attempt (for the recovery log line).
func (p *Periphery) refreshWeather(ctx context.Context, failures int) error {
	start := p.cfg.Clock.Now()
	report, err := p.fetchWeather(ctx)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.weatherText, p.weatherAt = report, p.cfg.Clock.Now()
	p.mu.Unlock()
	if failures > 0 {
		p.log.Info("weather refresh recovered", "attempt", failures+1, "elapsed", p.cfg.Clock.Now().Sub(start))
	}
	return nil
}

// weatherLoop refreshes at start, then shortly before the reading expires;
// failures retry after 60 s, doubling, capped at WeatherTTL.
func (p *Periphery) weatherLoop(ctx context.Context) {
	failures := 0
	for {
		err := p.refreshWeather(ctx, failures)
		if ctx.Err() != nil {
			return
		}
		var delay time.Duration
		if err == nil {
			failures = 0
			delay = weatherRefreshDelay(p.cfg.WeatherTTL)
		} else {
			failures++
			delay = weatherBackoff(failures, p.cfg.WeatherTTL)
			if failures == 1 {
				p.log.Warn("weather refresh failed", "error", err, "attempt", failures, "delay", delay)
			} else {
				p.log.Debug("weather refresh failed", "error", err, "attempt", failures, "delay", delay)
			}
		}
		if p.sleep(ctx, delay) != nil {
			return
		}
	}
}

// weatherRefreshDelay is the wait after a good reading: the TTL less a small
// lead (a tenth, at most a minute), so the next reading usually lands before
// the current one expires and the context line does not lose its weather.
func weatherRefreshDelay(ttl time.Duration) time.Duration {
	return ttl - min(ttl/10, time.Minute)
}

// weatherBackoff is the wait after the n-th consecutive failure (n ≥ 1).
func weatherBackoff(n int, ttl time.Duration) time.Duration {
	d := weatherRetryBase
	for i := 1; i < n && d < ttl; i++ {
		d *= 2
	}
	return min(d, ttl)
}
