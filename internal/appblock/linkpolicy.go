package appblock

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/net/idna"
)

// MaxLinkLength bounds a link an app asks to open.
const MaxLinkLength = 2048

// hostProfile maps a host as a browser's URL parser does (UTS #46,
// non-transitional, as the WHATWG URL standard): case folded, full-width
// characters and dots mapped to ASCII, Unicode labels to punycode. STD3
// rules are off, as in browsers, so "_" is a host character.
var hostProfile = idna.New(idna.MapForLookup(), idna.Transitional(false), idna.StrictDomainName(false), idna.BidiRule())

// CheckOpenLink applies seed 004's policy to a link an app asks the host
// to open (ui/open-link), before the person is asked to confirm it. It
// returns nil for a link that may be offered, else why not:
//
//   - https only, with a host and no userinfo (user:pass@ hides the host);
//   - not an IP address, in any form a browser reads as one: dotted IPv4,
//     a single number (http://2130706433), hex or octal parts (0x7f.1,
//     0177.0.0.1), fewer than four parts (127.1), full-width digits, IPv6
//     literals ([::1], [::ffff:127.0.0.1]);
//   - not localhost nor a name under .localhost;
//   - not one of our own origins (ownOrigins, such as the console's and
//     the API's URLs) nor a name under their hosts, whatever the port.
//
// Only the link's text is checked: a name that resolves to a private
// address is offered like any other (what our resolver answers says nothing
// of the person's browser's, and the person confirms the full link).
//
// The host is compared as the browser will use it (hostProfile), so
// look-alikes such as "ＬＯＣＡＬＨＯＳＴ" or "127。0。0。1" are caught. The same rules
// are in static/mcphost.js (checkLink); testdata/link_policy.json is the
// table both are tested against.
func CheckOpenLink(raw string, ownOrigins []string) error {
	if len(raw) > MaxLinkLength {
		return fmt.Errorf("the link is longer than %d characters", MaxLinkLength)
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return errors.New("the link is not a valid URL")
	}
	if u.Scheme != "https" {
		return errors.New("only https links may be opened")
	}
	if u.User != nil {
		return errors.New("a link may not carry a user name or password")
	}
	host, err := canonicalHost(u.Hostname())
	if err != nil {
		return err
	}
	if isIPHost(host) {
		return errors.New("a link may not point at an IP address")
	}
	if !allIn(host, "abcdefghijklmnopqrstuvwxyz0123456789._-") {
		return errors.New("the link's host is not a valid name")
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return errors.New("a link may not point at localhost")
	}
	for _, own := range ownOrigins {
		ou, err := url.Parse(own)
		if err != nil || ou.Hostname() == "" {
			continue
		}
		ownHost, err := canonicalHost(ou.Hostname())
		if err != nil {
			continue
		}
		if host == ownHost || strings.HasSuffix(host, "."+ownHost) {
			return errors.New("a link may not point at this service's own pages")
		}
	}
	return nil
}

// canonicalHost is the host as the browser will resolve it, without a
// trailing dot.
func canonicalHost(h string) (string, error) {
	if h == "" {
		return "", errors.New("the link has no host")
	}
	if strings.Contains(h, ":") { // an IPv6 literal (url.Parse took off its brackets)
		return h, nil
	}
	ascii, err := hostProfile.ToASCII(h)
	if err != nil || ascii == "" {
		return "", errors.New("the link's host is not a valid name")
	}
	return strings.TrimSuffix(strings.ToLower(ascii), "."), nil
}

// isIPHost reports whether a browser would read host as an IP address: an
// IPv6 literal, or (WHATWG URL, "ends in a number") a host whose last label
// is all decimal digits or 0x and hex digits, which the URL parser takes
// as IPv4 in one of its forms, or refuses.
func isIPHost(host string) bool {
	if strings.Contains(host, ":") {
		return true
	}
	labels := strings.Split(host, ".")
	last := labels[len(labels)-1]
	if last == "" && len(labels) > 1 {
		last = labels[len(labels)-2]
	}
	if last == "" {
		return false
	}
	if allIn(last, "0123456789") {
		return true
	}
	if hex, ok := strings.CutPrefix(strings.ToLower(last), "0x"); ok {
		return allIn(hex, "0123456789abcdef")
	}
	return false
}

func allIn(s, set string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(set, s[i]) < 0 {
			return false
		}
	}
	return true
}
