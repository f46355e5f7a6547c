package console

import (
	"net/url"
	"strconv"
)

// searchLink returns path with the non-empty filters of pairs (name,
// value, name, value, ...) and page n (left out for the first), so a list's
// search can be shared and paged.
func searchLink(path string, n int, pairs ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			v.Set(pairs[i], pairs[i+1])
		}
	}
	if n > 1 {
		v.Set("page", strconv.Itoa(n))
	}
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}
