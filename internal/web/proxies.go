package web

import (
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Proxies are the hops (load balancers, reverse proxies) whose
// X-Forwarded-For is believed (TRUSTED_PROXIES). The zero value trusts
// none: a client's address is its connection's.
type Proxies []netip.Prefix

// ClientAddr returns the address of the request's client: the connection's
// peer when it is not a trusted proxy; otherwise the X-Forwarded-For entries
// are read from the right (the hop nearest to us) and the first one that is
// not itself a trusted proxy is the client. Entries left of it were written
// by the client and are never believed. An entry that is not an address ends
// the walk at the hop that passed it on. IPv4-mapped IPv6 addresses are
// unmapped.
func (p Proxies) ClientAddr(c *fiber.Ctx) netip.Addr {
	addr := remoteAddr(c)
	if len(p) == 0 || !p.trusted(addr) {
		return addr
	}
	var hops []string // every X-Forwarded-For header, in order, as one list
	for _, h := range c.Request().Header.PeekAll(fiber.HeaderXForwardedFor) {
		hops = append(hops, strings.Split(string(h), ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return addr
		}
		addr = hop.Unmap()
		if !p.trusted(addr) {
			return addr
		}
	}
	return addr
}

func (p Proxies) trusted(a netip.Addr) bool {
	for _, pre := range p {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

// remoteAddr is the connection's peer address.
func remoteAddr(c *fiber.Ctx) netip.Addr {
	ap, err := netip.ParseAddrPort(c.Context().RemoteAddr().String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}
