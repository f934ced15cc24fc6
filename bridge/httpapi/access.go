package httpapi

import (
	"crypto/subtle"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/labstack/echo/v4"
)

// Access is the bridge's one rule for requests a web page could send: it
// knows the names of this machine, and the dashboard's credentials.
//
//   - Host: a request for the dashboard or the household's data must name
//     this machine (LocalHost), so a page that rebinds its own DNS name to
//     the bridge's address (DNS rebinding) is refused.
//   - Origin: a request that carries an Origin (or, without one, a
//     Referer) must come from this bridge's own pages (LocalOrigin).
//     Browsers send an Origin on every POST, PUT and DELETE, so this is
//     what refuses a cross-site write, rebinding included; the bridge's
//     real callers (xiaozhi, Tier1Slim, the relay, the firmware) send
//     none.
//   - Content-Type: a write whose body is declared and is not JSON gets
//     415 (CheckWrite): text/plain, forms and multipart are what a page on
//     another site can send without asking first.
//   - Credentials: with both a user and a password set, the dashboard and
//     the household's data need them (Private).
//
// Access is safe for concurrent use.
type Access struct {
	public     map[string]bool
	user, pass string
	hostname   func() (string, error)
	ifaceAddrs func() ([]net.Addr, error)
	clock      clockwork.Clock
	log        hclog.Logger

	mu     sync.Mutex
	names  map[string]bool     // the host name, its first label, <first label>.local
	addrs  map[netip.Addr]bool // the interfaces' addresses
	readAt time.Time           // when names and addrs were read; zero: never
}

// AccessConfig configures an Access. The zero value is usable: this
// machine's own names and addresses, no credentials.
type AccessConfig struct {
	// PublicHosts are more names (or addresses) of this machine, without
	// scheme or port: a reverse proxy's public name (BRIDGE_PUBLIC_HOSTS).
	PublicHosts []string
	// User and Pass are the dashboard's credentials (DOTTY_DASHBOARD_USER,
	// DOTTY_DASHBOARD_PASS); they apply when both are set.
	User, Pass string
	// Hostname and InterfaceAddrs read this machine's name and addresses;
	// nil: os.Hostname and net.InterfaceAddrs.
	Hostname       func() (string, error)
	InterfaceAddrs func() ([]net.Addr, error)
	// Clock times the re-reading of names and addresses; nil: the real one.
	Clock clockwork.Clock
	// Logger gets a warning when the machine's addresses cannot be read.
	Logger hclog.Logger
}

// machineReread bounds how often a Host naming no known name or address
// makes Access read the machine's names and addresses again: a new DHCP
// address is picked up, and a flood of foreign names costs one read per
// interval.
const machineReread = 10 * time.Second

// NewAccess returns the rule for cfg. Public hosts are taken as given
// (cmd/internal/bridgeapp checks BRIDGE_PUBLIC_HOSTS).
func NewAccess(cfg AccessConfig) *Access {
	a := &Access{public: map[string]bool{}, user: cfg.User, pass: cfg.Pass,
		hostname: cfg.Hostname, ifaceAddrs: cfg.InterfaceAddrs, clock: cfg.Clock, log: cfg.Logger}
	if a.hostname == nil {
		a.hostname = os.Hostname
	}
	if a.ifaceAddrs == nil {
		a.ifaceAddrs = net.InterfaceAddrs
	}
	if a.clock == nil {
		a.clock = clockwork.NewRealClock()
	}
	if a.log == nil {
		a.log = hclog.NewNullLogger()
	}
	for _, h := range cfg.PublicHosts {
		if h = hostOnly(h); h != "" {
			a.public[h] = true
		}
	}
	return a
}

// Locked reports whether the dashboard's credentials are set.
func (a *Access) Locked() bool { return a.user != "" && a.pass != "" }

// LocalHost reports whether a Host header (or an origin's host) names
// this machine, with any port: localhost and *.localhost, a loopback
// address, one of this machine's interface addresses (a phone on the LAN
// types the IP), its host name, that name's first label and
// <first label>.local (mDNS), or a public host. Case and one trailing dot
// do not matter. An empty Host (HTTP/1.0, never a browser) is allowed.
func (a *Access) LocalHost(host string) bool {
	if host == "" {
		return true
	}
	return a.allowed(hostOnly(host))
}

// LocalOrigin reports whether the page behind a request, if there is one,
// is this bridge's: every Origin value, or the Referer when there is no
// Origin, must be an http(s) URL whose host LocalHost allows and whose
// port is the one the request came to (the Host's; 80 or 443 by scheme
// when absent), so a page served by another program on this machine is
// another site. A public host's page may have any port: a reverse proxy
// serves it on its own. "null" (sandboxed pages, file: URLs, a
// no-referrer policy) is refused; a request with neither header is
// allowed: it was not sent by a web page's script or form.
func (a *Access) LocalOrigin(r *http.Request) bool {
	vals := r.Header.Values("Origin")
	if len(vals) == 0 {
		if ref := r.Header.Get("Referer"); ref != "" {
			vals = []string{ref}
		}
	}
	for _, v := range vals {
		u, err := url.Parse(strings.TrimSpace(v))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return false
		}
		host := hostOnly(u.Host)
		if !a.allowed(host) || (!a.public[host] && urlPort(u) != requestPort(r)) {
			return false
		}
	}
	return true
}

// urlPort is a URL's port, its scheme's default when it has none.
func urlPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// requestPort is the port a request's Host names, 80 or 443 without one.
func requestPort(r *http.Request) string {
	if _, p, err := net.SplitHostPort(r.Host); err == nil && p != "" {
		return p
	}
	if r.TLS != nil {
		return "443"
	}
	return "80"
}

// Refusals of the rule, in the FastAPI-shaped error body.
var (
	// ErrCrossSite is a request from a page on another site.
	ErrCrossSite = NewError(http.StatusForbidden, "cross-site request refused")
	// ErrForeignHost is a Host that does not name this machine.
	ErrForeignHost = NewError(http.StatusForbidden,
		"the Host header does not name this machine; add a reverse proxy's public name to BRIDGE_PUBLIC_HOSTS")
	// ErrNotJSON is a body declared as something other than JSON.
	ErrNotJSON = NewError(http.StatusUnsupportedMediaType, "the request body must be application/json")
	// errNotAuthenticated is a missing or wrong dashboard credential.
	errNotAuthenticated = NewError(http.StatusUnauthorized, "Not authenticated")
)

// CheckWrite is the rule of every state-changing request (POST, PUT,
// PATCH, DELETE): a page on another site gets ErrCrossSite (403), and a
// body declared with a type that is not JSON gets ErrNotJSON (415) unless
// ownBody says the route reads a type of its own (photo and audio
// uploads, the firmware's recordings), which it checks itself. A missing
// Content-Type is accepted, as bridge.py did: real callers may send none,
// and a browser never sends a body without a type and without an Origin.
// Host is not checked: xiaozhi in Docker calls http://bridge:8080.
func (a *Access) CheckWrite(r *http.Request, ownBody bool) error {
	if !a.LocalOrigin(r) {
		return ErrCrossSite
	}
	if ct := r.Header.Get(echo.HeaderContentType); ct != "" && !ownBody && !IsJSON(ct) {
		return ErrNotJSON
	}
	return nil
}

// Private guards a route that shows or changes the household: the
// dashboard (/ui) and the household's data on /api (who was seen, the
// scene, security records, the journal, the calendar). The Host must name
// this machine (403), a write must come from a page on this machine (403;
// a read may be a link followed from another site, whose answer that site
// cannot read), then the dashboard's credentials are asked for when they
// are set (401, realm "dotty", the dashboard's: a browser that has logged
// in to /ui sends them again without asking).
func (a *Access) Private(next echo.HandlerFunc) echo.HandlerFunc {
	return a.OwnHost(func(c echo.Context) error {
		r := c.Request()
		if !SafeMethod(r.Method) && !a.LocalOrigin(r) {
			return ErrCrossSite
		}
		if a.Locked() && !a.authorized(r) {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Basic realm="dotty"`)
			return errNotAuthenticated
		}
		return next(c)
	})
}

// OwnHost guards a route anyone on the network may read without the
// dashboard's credentials that still must be asked for by one of this
// machine's names (403 ErrForeignHost otherwise), so a page that rebinds
// its own DNS name to the bridge cannot read it: the API description
// (/openapi.json, /docs). Private applies it first.
func (a *Access) OwnHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !a.LocalHost(c.Request().Host) {
			return ErrForeignHost
		}
		return next(c)
	}
}

// authorized compares the request's Basic credentials in constant time.
func (a *Access) authorized(r *http.Request) bool {
	user, pass, ok := r.BasicAuth()
	userOK := subtle.ConstantTimeCompare([]byte(user), []byte(a.user)) == 1
	passOK := subtle.ConstantTimeCompare([]byte(pass), []byte(a.pass)) == 1
	return ok && userOK && passOK
}

// RequireJSON refuses with ErrNotJSON (415) a body not declared as JSON,
// a missing type included: for routes only the bridge's own page calls.
func RequireJSON(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !IsJSON(c.Request().Header.Get(echo.HeaderContentType)) {
			return ErrNotJSON
		}
		return next(c)
	}
}

// IsJSON reports whether a Content-Type declares JSON: application/json
// or application/<anything>+json, with any parameters (bridge.py's rule).
func IsJSON(ctype string) bool {
	mt, _, err := mime.ParseMediaType(ctype)
	if err != nil {
		return false
	}
	return mt == echo.MIMEApplicationJSON || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// SafeMethod reports a method that changes nothing (GET, HEAD, OPTIONS).
func SafeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// LoopbackPeer reports whether a request comes from this machine: its TCP
// peer is a loopback address and no forwarding header (X-Forwarded-For,
// X-Real-IP, Forwarded) names anything else, so a reverse proxy on the
// same host cannot make a LAN caller look local.
func LoopbackPeer(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil || !isLoopback(host) {
		return false
	}
	for _, name := range []string{"X-Forwarded-For", "X-Real-IP"} {
		for _, v := range r.Header.Values(name) {
			for _, part := range strings.Split(v, ",") {
				if !isLoopback(part) {
					return false
				}
			}
		}
	}
	for _, v := range r.Header.Values("Forwarded") {
		for _, elem := range strings.Split(v, ",") {
			for _, pair := range strings.Split(elem, ";") {
				k, val, ok := strings.Cut(pair, "=")
				if ok && strings.EqualFold(strings.TrimSpace(k), "for") && !isLoopback(val) {
					return false
				}
			}
		}
	}
	return true
}

// isLoopback parses an address as forwarding headers write it ("::1",
// "[::1]:80", "\"[::1]\"", "127.0.0.1:5") and reports whether it is loopback.
func isLoopback(s string) bool {
	ip, err := netip.ParseAddr(hostOnly(strings.Trim(strings.TrimSpace(s), `"`)))
	return err == nil && ip.Unmap().IsLoopback()
}

// hostOnly is a host[:port] as compared: without port, brackets or one
// trailing dot, in lower case.
func hostOnly(h string) string {
	h = strings.TrimSpace(h)
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// allowed reports whether a host (as hostOnly leaves it) names this machine.
func (a *Access) allowed(h string) bool {
	switch {
	case h == "":
		return false
	case h == "localhost", strings.HasSuffix(h, ".localhost"), a.public[h]:
		return true
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		ip = ip.WithZone("").Unmap()
		if ip.IsLoopback() {
			return true
		}
		return a.known(func() bool { return a.addrs[ip] })
	}
	return a.known(func() bool { return a.names[h] })
}

// known reports whether has holds for the machine's names and addresses,
// reading them again first when they have never been read, or when has
// fails and they were read more than machineReread ago.
func (a *Access) known(has func() bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.readAt.IsZero() && (has() || a.clock.Since(a.readAt) < machineReread) {
		return has()
	}
	a.readMachine()
	return has()
}

// readMachine reads the host name and the interfaces' addresses; a.mu is
// held. A failed read keeps what was known.
func (a *Access) readMachine() {
	a.readAt = a.clock.Now()
	if name, err := a.hostname(); err == nil && name != "" {
		name = hostOnly(name)
		short, _, _ := strings.Cut(name, ".")
		a.names = map[string]bool{name: true, short: true, short + ".local": true}
	}
	addrs, err := a.ifaceAddrs()
	if err != nil {
		a.log.Warn("cannot read this machine's addresses; the dashboard answers only its names", "error", err)
		return
	}
	set := make(map[netip.Addr]bool, len(addrs))
	for _, ad := range addrs {
		var ip net.IP
		switch v := ad.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if na, ok := netip.AddrFromSlice(ip); ok {
			set[na.Unmap()] = true
		}
	}
	a.addrs = set
}
