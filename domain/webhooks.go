package domain

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// WebhooksStream holds every webhook endpoint's registration, secret
// rotation, update, disabling and deletion, of every tenant. It only grows: the
// command side folds it once per process, then reads what was appended.
const WebhooksStream = "webhooks"

// WebhookDeliveryStream is the stream of one delivery (one event to one
// endpoint): its schedule, each attempt's claim and outcome, redeliveries.
func WebhookDeliveryStream(deliveryID string) string { return "webhook-delivery-" + deliveryID }

// Webhook event types.
const (
	EventWebhookRegistered    = "WebhookRegistered"
	EventWebhookSecretRotated = "WebhookSecretRotated"
	EventWebhookDisabled      = "WebhookDisabled"
	EventWebhookUpdated       = "WebhookUpdated"
	EventWebhookDeleted       = "WebhookDeleted"

	EventWebhookDeliveryScheduled   = "WebhookDeliveryScheduled"
	EventWebhookAttemptClaimed      = "WebhookAttemptClaimed"
	EventWebhookAttemptRecorded     = "WebhookAttemptRecorded"
	EventWebhookRedeliveryRequested = "WebhookRedeliveryRequested"
)

// WebhookSecretPrefix starts every signing secret (Standard Webhooks).
const WebhookSecretPrefix = "whsec_"

// WebhookAllEvents subscribes an endpoint to every handoff event type,
// including types added after its registration.
const WebhookAllEvents = "*"

// Webhook endpoint statuses.
const (
	WebhookStatusActive   = "active"
	WebhookStatusDisabled = "disabled" // the receiver answered 410 Gone, kept failing, or its owner disabled it
	WebhookStatusDeleted  = "deleted"
)

// Limits of a registration.
const (
	maxWebhookURL       = 2048
	maxWebhookListItems = 50
	maxWebhookExecutor  = 200
)

// eventTypeRE is the shape of an event type name: handoff event types are
// PascalCase words (ContractCreated, ApprovalExpired...). Names are checked
// by shape, not against today's list, so an endpoint can subscribe to a
// type the server is about to learn.
var eventTypeRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,63}$`)

// WebhookRegistered records an endpoint. Secret is the signing secret as
// shown to its owner (whsec_ + base64): the store keeps it, as the sender
// needs it to sign.
type WebhookRegistered struct {
	WebhookID       string    `json:"webhookId"`
	Tenant          string    `json:"tenant"`
	URL             string    `json:"url"`
	EventTypes      []string  `json:"eventTypes"`
	TargetExecutors []string  `json:"targetExecutors,omitempty"`
	Secret          string    `json:"secret"`
	CreatedAt       time.Time `json:"createdAt"`
}

// WebhookSecretRotated replaces an endpoint's secret; the previous one
// keeps signing until PreviousExpiresAt.
type WebhookSecretRotated struct {
	WebhookID         string    `json:"webhookId"`
	Secret            string    `json:"secret"`
	PreviousExpiresAt time.Time `json:"previousExpiresAt"`
	RotatedAt         time.Time `json:"rotatedAt"`
	// RotationID names a rotation made under an Idempotency-Key, so that
	// its retry finds it made rather than rotating again.
	RotationID string `json:"rotationId,omitempty"`
}

// WebhookDisabled stops deliveries to an endpoint: its receiver answered
// 410 Gone, or none of its attempts succeeded for days (Reason says which).
type WebhookDisabled struct {
	WebhookID  string    `json:"webhookId"`
	Reason     string    `json:"reason"`
	StatusCode int       `json:"statusCode,omitempty"`
	DeliveryID string    `json:"deliveryId,omitempty"`
	DisabledAt time.Time `json:"disabledAt"`
}

// WebhookUpdated records an owner's change of an endpoint: the fields
// present are the new values (TargetExecutors present and empty: every
// handoff); Disabled, when present, stops (true) or resumes (false) its
// deliveries.
type WebhookUpdated struct {
	WebhookID       string    `json:"webhookId"`
	URL             string    `json:"url,omitempty"`
	EventTypes      []string  `json:"eventTypes,omitempty"`
	TargetExecutors *[]string `json:"targetExecutors,omitempty"`
	Disabled        *bool     `json:"disabled,omitempty"`
	UpdatedAt       time.Time `json:"updatedAt"`
}

// WebhookDisabledByOwner is the disabledReason of an endpoint its owner
// disabled (WebhookUpdated).
const WebhookDisabledByOwner = "disabled by its owner"

// WebhookDeleted removes an endpoint.
type WebhookDeleted struct {
	WebhookID string    `json:"webhookId"`
	DeletedAt time.Time `json:"deletedAt"`
}

// Webhook is an endpoint as folded from the webhooks stream. The secrets
// never leave the server's side: they are not serialised.
type Webhook struct {
	WebhookID         string     `json:"webhookId"`
	Tenant            string     `json:"tenant"`
	URL               string     `json:"url"`
	EventTypes        []string   `json:"eventTypes"`
	TargetExecutors   []string   `json:"targetExecutors"`
	Status            string     `json:"status"`
	DisabledReason    string     `json:"disabledReason,omitempty"`
	CreatedAt         time.Time  `json:"createdAt"`
	UpdatedAt         *time.Time `json:"updatedAt,omitempty"`
	SecretRotatedAt   *time.Time `json:"secretRotatedAt,omitempty"`
	PreviousExpiresAt *time.Time `json:"previousSecretExpiresAt,omitempty"`

	Secret         string `json:"-"`
	PreviousSecret string `json:"-"`
	RotationID     string `json:"-"` // of the last rotation (WebhookSecretRotated)
}

// Secrets are the secrets that sign a message sent at now: the current
// one first, then the previous one during its grace period.
func (w *Webhook) Secrets(now time.Time) []string {
	out := []string{w.Secret}
	if w.PreviousSecret != "" && w.PreviousExpiresAt != nil && now.Before(*w.PreviousExpiresAt) {
		out = append(out, w.PreviousSecret)
	}
	return out
}

// Wants reports whether the endpoint takes an event of type typ about a
// handoff for targetExecutor.
func (w *Webhook) Wants(typ, targetExecutor string) bool {
	if w.Status != WebhookStatusActive {
		return false
	}
	if !slices.Contains(w.EventTypes, WebhookAllEvents) && !slices.Contains(w.EventTypes, typ) {
		return false
	}
	return len(w.TargetExecutors) == 0 || slices.Contains(w.TargetExecutors, targetExecutor)
}

// ApplyWebhookEvent folds one event of the webhooks stream into hooks (by
// id). Events about unknown endpoints are ignored.
func ApplyWebhookEvent(hooks map[string]*Webhook, typ string, data []byte) error {
	switch typ {
	case EventWebhookRegistered:
		var e WebhookRegistered
		if err := json.Unmarshal(data, &e); err != nil {
			return err
		}
		if e.TargetExecutors == nil {
			e.TargetExecutors = []string{}
		}
		hooks[e.WebhookID] = &Webhook{WebhookID: e.WebhookID, Tenant: e.Tenant, URL: e.URL, EventTypes: e.EventTypes,
			TargetExecutors: e.TargetExecutors, Status: WebhookStatusActive, CreatedAt: e.CreatedAt, Secret: e.Secret}
	case EventWebhookSecretRotated:
		var e WebhookSecretRotated
		if err := json.Unmarshal(data, &e); err != nil {
			return err
		}
		if w := hooks[e.WebhookID]; w != nil {
			w.PreviousSecret, w.Secret, w.RotationID = w.Secret, e.Secret, e.RotationID
			exp, at := e.PreviousExpiresAt, e.RotatedAt
			w.PreviousExpiresAt, w.SecretRotatedAt = &exp, &at
		}
	case EventWebhookDisabled:
		var e WebhookDisabled
		if err := json.Unmarshal(data, &e); err != nil {
			return err
		}
		if w := hooks[e.WebhookID]; w != nil && w.Status == WebhookStatusActive {
			w.Status, w.DisabledReason = WebhookStatusDisabled, e.Reason
		}
	case EventWebhookUpdated:
		var e WebhookUpdated
		if err := json.Unmarshal(data, &e); err != nil {
			return err
		}
		w := hooks[e.WebhookID]
		if w == nil || w.Status == WebhookStatusDeleted {
			return nil
		}
		if e.URL != "" {
			w.URL = e.URL
		}
		if e.EventTypes != nil {
			w.EventTypes = e.EventTypes
		}
		if e.TargetExecutors != nil {
			w.TargetExecutors = *e.TargetExecutors
			if w.TargetExecutors == nil {
				w.TargetExecutors = []string{}
			}
		}
		switch {
		case e.Disabled == nil:
		case *e.Disabled && w.Status == WebhookStatusActive:
			w.Status, w.DisabledReason = WebhookStatusDisabled, WebhookDisabledByOwner
		case !*e.Disabled && w.Status == WebhookStatusDisabled:
			w.Status, w.DisabledReason = WebhookStatusActive, ""
		}
		at := e.UpdatedAt
		w.UpdatedAt = &at
	case EventWebhookDeleted:
		var e WebhookDeleted
		if err := json.Unmarshal(data, &e); err != nil {
			return err
		}
		if w := hooks[e.WebhookID]; w != nil {
			w.Status = WebhookStatusDeleted
		}
	}
	return nil
}

// NewWebhookSecret is a fresh signing secret: whsec_ and the base64 of 32
// random bytes.
func NewWebhookSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// NewWebhookID is a fresh endpoint id (wh_ and 16 hex digits).
func NewWebhookID() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "wh_" + hex.EncodeToString(b), nil
}

var webhookIDRE = regexp.MustCompile(`^wh_[0-9a-f]{16}$`)

// ValidWebhookID reports whether id has the endpoint id format.
func ValidWebhookID(id string) bool { return webhookIDRE.MatchString(id) }

// WebhookRegistration is what a caller asks to register.
type WebhookRegistration struct {
	URL             string
	EventTypes      []string
	TargetExecutors []string
}

// Validate checks a registration and normalises its lists (duplicates
// dropped, order kept). A URL naming a private, loopback or otherwise
// internal address literally (or localhost) is refused unless
// allowPrivate: the sender would refuse to connect to it anyway.
func (r *WebhookRegistration) Validate(allowPrivate bool) error {
	var bad []FieldError
	if f := checkWebhookURL(r.URL, allowPrivate); f != nil {
		bad = append(bad, *f)
	}
	bad = append(bad, checkEventTypes(r.EventTypes)...)
	bad = append(bad, checkTargetExecutors(r.TargetExecutors)...)
	if len(bad) > 0 {
		return Invalid("webhooks.register", bad...)
	}
	r.EventTypes = dedupe(r.EventTypes)
	r.TargetExecutors = dedupe(r.TargetExecutors)
	if r.TargetExecutors == nil {
		r.TargetExecutors = []string{}
	}
	return nil
}

// WebhookUpdate is what a caller asks to change of an endpoint: nil is
// left as it is.
type WebhookUpdate struct {
	URL             *string
	EventTypes      *[]string
	TargetExecutors *[]string // empty: every handoff
	Disabled        *bool
}

// Validate checks the fields an update names, by the rules of a
// registration, and normalises its lists as a registration's.
func (u *WebhookUpdate) Validate(allowPrivate bool) error {
	var bad []FieldError
	if u.URL != nil {
		if f := checkWebhookURL(*u.URL, allowPrivate); f != nil {
			bad = append(bad, *f)
		}
	}
	if u.EventTypes != nil {
		bad = append(bad, checkEventTypes(*u.EventTypes)...)
	}
	if u.TargetExecutors != nil {
		bad = append(bad, checkTargetExecutors(*u.TargetExecutors)...)
	}
	if len(bad) > 0 {
		return Invalid("webhooks.update", bad...)
	}
	if u.EventTypes != nil {
		ts := dedupe(*u.EventTypes)
		u.EventTypes = &ts
	}
	if u.TargetExecutors != nil {
		ts := dedupe(*u.TargetExecutors)
		if ts == nil {
			ts = []string{}
		}
		u.TargetExecutors = &ts
	}
	return nil
}

func checkEventTypes(types []string) []FieldError {
	var bad []FieldError
	add := func(ptr, code, msg string) { bad = append(bad, FieldError{Pointer: ptr, Code: code, Message: msg}) }
	switch {
	case types == nil:
		add("/eventTypes", "required", `is required: a list of event type names (such as "ContractCreated"), or ["*"] for all`)
	case len(types) == 0:
		add("/eventTypes", "empty", `must name at least one event type, or "*" for all`)
	case len(types) > maxWebhookListItems:
		add("/eventTypes", "too_many", fmt.Sprintf("names more than %d event types", maxWebhookListItems))
	default:
		for i, t := range types {
			if t != WebhookAllEvents && !eventTypeRE.MatchString(t) {
				add(fmt.Sprintf("/eventTypes/%d", i), "invalid_format", `must be an event type name (PascalCase letters and digits, up to 64, such as "ContractCreated") or "*"`)
			}
		}
	}
	return bad
}

func checkTargetExecutors(targets []string) []FieldError {
	if len(targets) > maxWebhookListItems {
		return []FieldError{{Pointer: "/targetExecutors", Code: "too_many", Message: fmt.Sprintf("names more than %d executors", maxWebhookListItems)}}
	}
	var bad []FieldError
	for i, e := range targets {
		// Characters, as a contract's targetExecutor is measured.
		// The characters a contract's targetExecutor refuses (NotPlain),
		// which the endpoint's record would keep and show as well.
		_, notPlain := NotPlain(e)
		if Blank(e) || utf8.RuneCountInString(e) > maxWebhookExecutor || notPlain {
			bad = append(bad, FieldError{Pointer: fmt.Sprintf("/targetExecutors/%d", i), Code: "invalid_format",
				Message: fmt.Sprintf("must be an executor name: 1 to %d characters, no control characters or bidirectional overrides", maxWebhookExecutor)})
		}
	}
	return bad
}

func dedupe(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func checkWebhookURL(raw string, allowPrivate bool) *FieldError {
	bad := func(code, msg string) *FieldError { return &FieldError{Pointer: "/url", Code: code, Message: msg} }
	if raw == "" {
		return bad("required", "is required: the absolute http(s) URL deliveries are POSTed to")
	}
	if len(raw) > maxWebhookURL {
		return bad("too_long", fmt.Sprintf("is longer than %d bytes", maxWebhookURL))
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return bad("invalid_url", "must be an absolute URL such as https://hooks.example.com/baton")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return bad("invalid_scheme", "must be an https (recommended) or http URL")
	}
	if u.User != nil {
		return bad("credentials_in_url", "must not carry a user name or password; the signature authenticates Baton to the receiver")
	}
	if u.Fragment != "" {
		return bad("invalid_url", "must not have a fragment")
	}
	host := u.Hostname()
	if host == "" {
		return bad("invalid_url", "must name a host")
	}
	if !strings.Contains(host, ":") {
		// Judged as the deliverer's HTTP client will reach it: it maps a
		// name through IDNA first (full-width letters, the ideographic
		// full stop), so ｌｏｃａｌｈｏｓｔ is localhost.
		ascii, err := idna.Lookup.ToASCII(host)
		if err != nil || !dnsName(ascii) {
			return bad("invalid_url", "names a host that is not a valid domain name or address")
		}
		host = ascii
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return bad("invalid_url", "has a port out of range; a port is 1 to 65535")
		}
	}
	if numericLastLabel(host) && !strings.Contains(host, ":") {
		// WHATWG URLs, curl and C resolvers read 127.1, 0x7f000001 and
		// 2130706433 as IPv4 addresses: only a.b.c.d is taken, so that
		// the address is judged as the deliverer will reach it.
		if a, err := netip.ParseAddr(host); err != nil || !a.Is4() {
			return bad("invalid_url", "names an IPv4 address in a form other than four decimal numbers (a.b.c.d)")
		}
	}
	if allowPrivate {
		return nil
	}
	if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return bad("private_address", "names this machine (localhost); deliveries go only to public addresses unless the operator allows private ones")
	}
	if a, err := netip.ParseAddr(host); err == nil && BlockedWebhookAddr(a) {
		return bad("private_address", "is a private, loopback, link-local or otherwise internal address; deliveries go only to public addresses unless the operator allows private ones")
	}
	return nil
}

// dnsName reports whether host, mapped by IDNA, is a name a resolver can
// look up: labels of 1 to 63 bytes (a trailing root dot aside), 253 bytes
// in all. The mapping lets through an empty label (a..b) and maps xn--
// to no name at all: registered, every delivery to them failed.
func dnsName(host string) bool {
	host = strings.TrimSuffix(host, ".")
	if host == "" || len(host) > 253 {
		return false
	}
	for label := range strings.SplitSeq(host, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
	}
	return true
}

var (
	cgnat   = netip.MustParsePrefix("100.64.0.0/10")
	ula     = netip.MustParsePrefix("fc00::/7")
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4  = netip.MustParsePrefix("2002::/16")
	thisNet = netip.MustParsePrefix("0.0.0.0/8")
	bench   = netip.MustParsePrefix("198.18.0.0/15")
	reserve = netip.MustParsePrefix("240.0.0.0/4")
)

// nat64Local is RFC 8215's local-use NAT64 prefix: a translator inside
// the operator's network maps it onto any IPv4 address, private ones
// included, and where in it the IPv4 address sits is the network's
// choice (RFC 6052), so the whole prefix is internal.
var nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")

// siteLocal is IPv6's site-local prefix (fec0::/10): deprecated by RFC
// 3879, which lets networks that use it go on doing so, and internal to a
// site by definition.
var siteLocal = netip.MustParsePrefix("fec0::/10")

// v4Compat (::a.b.c.d, RFC 4291's deprecated IPv4-compatible form) and
// siit (::ffff:0:a.b.c.d, RFC 2765's IPv4-translated form) carry an IPv4
// address no public service is reached by: refused whole.
var (
	v4Compat = netip.MustParsePrefix("::/96")
	siit     = netip.MustParsePrefix("::ffff:0:0:0/96")
)

// BlockedWebhookAddr reports whether deliveries may not go to a: loopback,
// private (RFC 1918), link-local, unspecified, multicast, CGNAT
// (100.64/10), IPv6 unique local (fc00::/7) and site-local (fec0::/10),
// 0/8, benchmarking and reserved ranges, the local-use NAT64 prefix
// (64:ff9b:1::/48) and the
// deprecated IPv4-compatible (::/96) and SIIT (::ffff:0:0:0/96) forms; an
// IPv4-mapped or translated IPv6 form (::ffff:a.b.c.d, 64:ff9b::/96, 6to4)
// is judged by the IPv4 address it carries.
func BlockedWebhookAddr(a netip.Addr) bool {
	a = a.WithZone("")
	if a.Is4In6() {
		a = a.Unmap()
	}
	if a.Is6() && (nat64.Contains(a) || sixTo4.Contains(a)) {
		b := a.As16()
		var v4 [4]byte
		if nat64.Contains(a) {
			copy(v4[:], b[12:])
		} else {
			copy(v4[:], b[2:6])
		}
		if BlockedWebhookAddr(netip.AddrFrom4(v4)) {
			return true
		}
	}
	return !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() ||
		cgnat.Contains(a) || ula.Contains(a) || siteLocal.Contains(a) || nat64Local.Contains(a) || v4Compat.Contains(a) || siit.Contains(a) ||
		thisNet.Contains(a) || bench.Contains(a) || reserve.Contains(a) ||
		a == netip.AddrFrom4([4]byte{255, 255, 255, 255})
}

// numericLastLabel reports whether host's last label (a trailing dot
// aside) is a number, decimal or 0x hexadecimal: the WHATWG URL rule for a
// host that is an IPv4 address, in whatever form.
func numericLastLabel(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := host[strings.LastIndexByte(host, '.')+1:]
	if l := strings.ToLower(last); strings.HasPrefix(l, "0x") {
		return strings.Trim(l[2:], "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}
