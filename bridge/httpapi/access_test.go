package httpapi

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/labstack/echo/v4"
)

// machine is a fake host: its name and interface addresses, changeable,
// with a count of how often they were read.
type machine struct {
	mu    sync.Mutex
	name  string
	addrs []string // CIDR
	fail  bool
	reads int
}

func (m *machine) hostname() (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.name, nil
}

func (m *machine) interfaceAddrs() ([]net.Addr, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	if m.fail {
		return nil, errors.New("netlink: operation not permitted")
	}
	var out []net.Addr
	for _, a := range m.addrs {
		ip, n, err := net.ParseCIDR(a)
		if err != nil {
			panic(err)
		}
		n.IP = ip
		out = append(out, n)
	}
	return out, nil
}

func (m *machine) set(f func(m *machine)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(m)
}

func (m *machine) readCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reads
}

// newMachine is dotty-pi.home.lan with a LAN IPv4 address, an IPv6 one
// and a container bridge, and the proxy name dotty.example.com.
func newMachine(user, pass string) (*Access, *machine, *clockwork.FakeClock) {
	m := &machine{name: "Dotty-Pi.home.lan", addrs: []string{"127.0.0.1/8", "::1/128", "192.168.1.20/24",
		"2001:db8::20/64", "fe80::1234/64", "172.17.0.1/16"}}
	clock := clockwork.NewFakeClock()
	a := NewAccess(AccessConfig{PublicHosts: []string{"Dotty.Example.com", "[2001:db8::99]", "203.0.113.7."},
		User: user, Pass: pass, Hostname: m.hostname, InterfaceAddrs: m.interfaceAddrs, Clock: clock})
	return a, m, clock
}

func TestLocalHost(t *testing.T) {
	a, _, _ := newMachine("", "")
	for _, tt := range []struct {
		host string
		ok   bool
	}{
		{"", true}, // HTTP/1.0: no browser sends it
		{"localhost", true},
		{"LOCALHOST:8080", true},
		{"localhost.:8080", true},
		{"app.localhost:8080", true},
		{"127.0.0.1", true},
		{"127.8.9.10:8080", true},
		{"[::1]:8080", true},
		{"[::1]", true},
		{"::1", true},
		{"[::ffff:127.0.0.1]:8080", true},
		{"192.168.1.20:8080", true}, // a phone on the LAN types the IP
		{"192.168.1.20", true},
		{"[::ffff:192.168.1.20]:8080", true},
		{"[2001:db8::20]:8080", true},
		{"[2001:DB8:0::20]:8080", true},
		{"[fe80::1234%25eth0]:8080", true},
		{"172.17.0.1:8080", true},
		{"dotty-pi.home.lan:8080", true},
		{"dotty-pi.home.lan.:8080", true},
		{"dotty-pi:8080", true},
		{"DOTTY-PI.LOCAL:8080", true},
		{"dotty-pi.local.", true},
		{"dotty.example.com", true}, // public hosts
		{"dotty.example.com.:443", true},
		{"[2001:db8::99]:443", true},
		{"203.0.113.7:80", true},
		{"evil.example:8080", false}, // DNS rebinding
		{"evil.example", false},
		{"dotty-pi.evil.example", false},
		{"dotty-pi.home.lan.evil.example", false},
		{"evil.local", false},
		{"evil-dotty-pi.local", false},
		{"localhost.evil.example", false},
		{"dotty.example.com.evil", false},
		{"192.168.1.21:8080", false}, // another machine's address
		{"0.0.0.0:8080", false},
		{"[::]:8080", false},
		{"[2001:db8::21]:8080", false},
		{"localhost..", false},
		{"127.0.0.1.evil.example", false},
	} {
		if got := a.LocalHost(tt.host); got != tt.ok {
			t.Errorf("LocalHost(%q) = %v, want %v", tt.host, got, tt.ok)
		}
	}
}

func TestLocalOrigin(t *testing.T) {
	a, _, _ := newMachine("", "")
	for _, tt := range []struct {
		name    string
		host    string // the request's Host
		headers []string
		ok      bool
	}{
		{"none (a real caller)", "bridge:8080", nil, true},
		{"this machine", "192.168.1.20:8080", []string{"Origin", "http://192.168.1.20:8080"}, true},
		{"another name of this machine, same port", "127.0.0.1:8080", []string{"Origin", "http://localhost:8080"}, true},
		{"mDNS name", "dotty-pi.local:8080", []string{"Origin", "http://dotty-pi.local:8080"}, true},
		{"IPv6", "[2001:db8::20]:8080", []string{"Origin", "http://[2001:db8::20]:8080"}, true},
		{"upper case", "localhost:8080", []string{"Origin", "HTTP://LOCALHOST:8080"}, true},
		{"default port", "localhost", []string{"Origin", "http://localhost"}, true},
		{"explicit default port", "localhost", []string{"Origin", "http://localhost:80"}, true},
		{"proxy's https name, Host kept", "dotty.example.com", []string{"Origin", "https://dotty.example.com"}, true},
		{"proxy's https name, Host rewritten", "127.0.0.1:8080", []string{"Origin", "https://dotty.example.com"}, true},
		{"referer of a page here", "dotty-pi:8080", []string{"Referer", "http://dotty-pi:8080/ui"}, true},
		{"another program on this machine", "localhost:8080", []string{"Origin", "http://localhost:3000"}, false},
		{"another program, LAN address", "192.168.1.20:8080", []string{"Origin", "http://192.168.1.20:3000"}, false},
		{"https on this port", "localhost:8080", []string{"Origin", "https://localhost"}, false},
		{"foreign", "localhost:8080", []string{"Origin", "http://evil.example"}, false},
		{"rebinding (same as its Host)", "evil.example:8080", []string{"Origin", "http://evil.example:8080"}, false},
		{"null", "localhost:8080", []string{"Origin", "null"}, false},
		{"empty", "localhost:8080", []string{"Origin", ""}, false},
		{"file", "localhost:8080", []string{"Origin", "file://"}, false},
		{"other scheme", "localhost:8080", []string{"Origin", "chrome-extension://abc"}, false},
		{"not a URL", "localhost:8080", []string{"Origin", "localhost"}, false},
		{"another LAN machine", "192.168.1.20:8080", []string{"Origin", "http://192.168.1.21:8080"}, false},
		{"userinfo trick", "localhost:8080", []string{"Origin", "http://localhost:8080@evil.example:8080"}, false},
		{"foreign referer", "localhost:8080", []string{"Referer", "http://evil.example/page"}, false},
		{"origin wins over referer", "localhost:8080", []string{"Origin", "http://evil.example", "Referer", "http://localhost:8080/ui"}, false},
		{"second origin foreign", "localhost:8080", []string{"Origin", "http://localhost:8080", "Origin", "http://evil.example"}, false},
	} {
		r := httptest.NewRequest(http.MethodPost, "/p", nil)
		r.Host = tt.host
		for i := 0; i+1 < len(tt.headers); i += 2 {
			r.Header.Add(tt.headers[i], tt.headers[i+1])
		}
		if got := a.LocalOrigin(r); got != tt.ok {
			t.Errorf("%s: Host %q %v: %v, want %v", tt.name, tt.host, tt.headers, got, tt.ok)
		}
	}
}

func TestCheckWrite(t *testing.T) {
	a, _, _ := newMachine("", "")
	for _, tt := range []struct {
		name         string
		host, origin string
		ctype        string
		ownBody      bool
		want         error
	}{
		{"xiaozhi: JSON, no Origin", "192.168.1.20:8080", "", "application/json", false, nil},
		{"Docker name, no Origin", "bridge:8080", "", "application/json", false, nil},
		{"no type (bridge.py accepted it)", "bridge:8080", "", "", false, nil},
		{"JSON with charset", "localhost", "", "application/json; charset=utf-8", false, nil},
		{"+json", "localhost", "", "application/merge-patch+json", false, nil},
		{"upper case type", "localhost", "", "Application/JSON", false, nil},
		{"the page's own action", "192.168.1.20:8080", "http://192.168.1.20:8080", "application/json", false, nil},
		{"text/plain", "localhost", "", "text/plain", false, ErrNotJSON},
		{"text/plain with charset", "localhost", "", "text/plain;charset=UTF-8", false, ErrNotJSON},
		{"form", "localhost", "", "application/x-www-form-urlencoded", false, ErrNotJSON},
		{"multipart on a JSON route", "localhost", "", "multipart/form-data; boundary=x", false, ErrNotJSON},
		{"garbage type", "localhost", "", "json", false, ErrNotJSON},
		{"multipart upload", "192.168.1.20:8080", "", "multipart/form-data; boundary=x", true, nil},
		{"firmware audio", "192.168.1.20:8080", "", "audio/L16;rate=16000;channels=1", true, nil},
		{"cross-site JSON", "localhost", "http://evil.example", "application/json", false, ErrCrossSite},
		{"cross-site text/plain", "localhost", "http://evil.example", "text/plain", false, ErrCrossSite},
		{"cross-site upload", "192.168.1.20:8080", "http://evil.example", "multipart/form-data; boundary=x", true, ErrCrossSite},
		{"rebinding", "evil.example:8080", "http://evil.example:8080", "application/json", false, ErrCrossSite},
		{"sandboxed page", "localhost", "null", "application/json", false, ErrCrossSite},
	} {
		r := httptest.NewRequest(http.MethodPost, "/api/x", strings.NewReader("{}"))
		r.Host = tt.host
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		if tt.ctype != "" {
			r.Header.Set("Content-Type", tt.ctype)
		}
		if got := a.CheckWrite(r, tt.ownBody); !errors.Is(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Private: Host first (403), then a write's Origin (403), then the
// dashboard's credentials when set (401 with the realm).
func TestPrivate(t *testing.T) {
	locked, _, _ := newMachine("parent", "s3cret")
	open, _, _ := newMachine("parent", "") // one credential set: no auth
	for _, tt := range []struct {
		name         string
		a            *Access
		method, host string
		headers      []string
		user, pass   string
		auth         bool
		status       int
	}{
		{"open, LAN address", open, http.MethodGet, "192.168.1.20:8080", nil, "", "", false, 200},
		{"open, rebinding", open, http.MethodGet, "evil.example:8080", nil, "", "", false, 403},
		{"open, rebinding write", open, http.MethodPost, "evil.example:8080", []string{"Origin", "http://evil.example:8080"}, "", "", false, 403},
		{"open, cross-site write", open, http.MethodPost, "localhost:8080", []string{"Origin", "http://evil.example"}, "", "", false, 403},
		{"open, link from another site", open, http.MethodGet, "localhost:8080", []string{"Referer", "http://wiki.example/"}, "", "", false, 200},
		{"open, own write", open, http.MethodPost, "dotty-pi.local:8080", []string{"Origin", "http://dotty-pi.local:8080"}, "", "", false, 200},
		{"locked, no credentials", locked, http.MethodGet, "localhost:8080", nil, "", "", false, 401},
		{"locked, wrong password", locked, http.MethodGet, "localhost:8080", nil, "parent", "nope", true, 401},
		{"locked, wrong user", locked, http.MethodGet, "localhost:8080", nil, "child", "s3cret", true, 401},
		{"locked, credentials", locked, http.MethodGet, "localhost:8080", nil, "parent", "s3cret", true, 200},
		{"locked, credentials, proxy name", locked, http.MethodGet, "dotty.example.com", nil, "parent", "s3cret", true, 200},
		{"locked, credentials, rebinding", locked, http.MethodGet, "evil.example:8080", nil, "parent", "s3cret", true, 403},
	} {
		e := echo.New()
		e.HTTPErrorHandler = ErrorHandler(nil)
		e.Any("/p", func(c echo.Context) error { return c.String(http.StatusOK, "ok") }, tt.a.Private)
		r := httptest.NewRequest(tt.method, "/p", nil)
		r.Host = tt.host
		for i := 0; i+1 < len(tt.headers); i += 2 {
			r.Header.Set(tt.headers[i], tt.headers[i+1])
		}
		if tt.auth {
			r.SetBasicAuth(tt.user, tt.pass)
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, r)
		if rec.Code != tt.status {
			t.Errorf("%s: %d %s, want %d", tt.name, rec.Code, rec.Body, tt.status)
		}
		switch rec.Code {
		case 401:
			if rec.Header().Get("WWW-Authenticate") != `Basic realm="dotty"` || rec.Body.String() != `{"detail":"Not authenticated"}` {
				t.Errorf("%s: %q %s", tt.name, rec.Header().Get("WWW-Authenticate"), rec.Body)
			}
		case 403:
			if !strings.Contains(rec.Body.String(), `"detail":"`) {
				t.Errorf("%s: body %s", tt.name, rec.Body)
			}
		}
	}
	if !locked.Locked() || open.Locked() {
		t.Error("Locked wrong")
	}
}

// OwnHost asks for a Host naming this machine and nothing else: no
// credentials even when they are set.
func TestOwnHost(t *testing.T) {
	locked, _, _ := newMachine("parent", "s3cret")
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler(nil)
	e.GET("/p", func(c echo.Context) error { return c.String(http.StatusOK, "ok") }, locked.OwnHost)
	for host, want := range map[string]int{"localhost:8080": 200, "192.168.1.20:8080": 200, "dotty-pi.local": 200,
		"dotty.example.com": 200, "evil.example:8080": 403, "192.168.1.99:8080": 403} {
		r := httptest.NewRequest(http.MethodGet, "/p", nil)
		r.Host = host
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, r)
		if rec.Code != want {
			t.Errorf("Host %s: %d %s, want %d", host, rec.Code, rec.Body, want)
		}
		if want == 403 && !strings.Contains(rec.Body.String(), "BRIDGE_PUBLIC_HOSTS") {
			t.Errorf("Host %s: %s does not name BRIDGE_PUBLIC_HOSTS", host, rec.Body)
		}
	}
}

func TestRequireJSON(t *testing.T) {
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler(nil)
	e.POST("/a", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) }, RequireJSON)
	for ctype, want := range map[string]int{"application/json": 204, "application/json; charset=utf-8": 204,
		"": 415, "text/plain": 415, "application/x-www-form-urlencoded": 415} {
		r := httptest.NewRequest(http.MethodPost, "/a", strings.NewReader("{}"))
		if ctype != "" {
			r.Header.Set("Content-Type", ctype)
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, r)
		if rec.Code != want {
			t.Errorf("%q: %d, want %d", ctype, rec.Code, want)
		}
		if want == 415 && rec.Body.String() != `{"detail":"the request body must be application/json"}` {
			t.Errorf("%q: %s", ctype, rec.Body)
		}
	}
}

// An address the machine gains later (DHCP) is known at most
// machineReread after the last read; a flood of foreign hosts reads the
// machine's addresses once per interval, not once per request.
func TestLocalHostRereadsTheMachine(t *testing.T) {
	a, m, clock := newMachine("", "")
	if a.LocalHost("192.168.1.77:8080") {
		t.Fatal("an address the machine does not have")
	}
	reads := m.readCount()
	for range 1000 {
		a.LocalHost("10.9.8.7:8080")
		a.LocalHost("evil.example")
	}
	if got := m.readCount(); got != reads {
		t.Errorf("%d reads for a flood of foreign hosts within the interval", got-reads)
	}
	m.set(func(m *machine) { m.addrs = append(m.addrs, "192.168.1.77/24") })
	if a.LocalHost("192.168.1.77:8080") {
		t.Error("re-read before the interval")
	}
	clock.Advance(machineReread)
	if !a.LocalHost("192.168.1.77:8080") {
		t.Error("the new address is not known after the interval")
	}
	// A failed read keeps what was known.
	m.set(func(m *machine) { m.fail = true })
	clock.Advance(time.Minute)
	if a.LocalHost("192.168.1.99") || !a.LocalHost("192.168.1.77") || !a.LocalHost("192.168.1.20") {
		t.Error("a failed read lost the known addresses")
	}
}

func TestLoopbackPeer(t *testing.T) {
	for _, tt := range []struct {
		peer    string
		headers []string
		ok      bool
	}{
		{"127.0.0.1:5555", nil, true},
		{"[::1]:5555", nil, true},
		{"127.8.9.10:5555", []string{"X-Forwarded-For", "127.0.0.1, ::1", "Forwarded", `for="[::1]:80"`, "X-Real-IP", "::1"}, true},
		{"192.168.1.20:5555", nil, false},
		{"127.0.0.1:5555", []string{"X-Forwarded-For", "127.0.0.1, 10.0.0.3"}, false},
		{"127.0.0.1:5555", []string{"X-Real-IP", "192.168.1.20"}, false},
		{"127.0.0.1:5555", []string{"Forwarded", `For = 192.168.1.20 ; proto=http`}, false},
		{"127.0.0.1:5555", []string{"X-Forwarded-For", "unknown"}, false},
		{"not an address", nil, false},
	} {
		r := httptest.NewRequest(http.MethodPost, "/admin/state", nil)
		r.RemoteAddr = tt.peer
		for i := 0; i+1 < len(tt.headers); i += 2 {
			r.Header.Set(tt.headers[i], tt.headers[i+1])
		}
		if got := LoopbackPeer(r); got != tt.ok {
			t.Errorf("%s %v: %v, want %v", tt.peer, tt.headers, got, tt.ok)
		}
	}
}
