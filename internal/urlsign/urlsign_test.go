package urlsign_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/urlsign"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	key := []byte(strings.Repeat("s", 32))
	s, err := urlsign.New(key, "test label", 10*time.Minute)
	require.NoError(t, err)
	now := time.Unix(1_800_000_000, 0)
	exp := s.Expiry(now).Unix()
	sig := s.Sign(exp, "a", "b")
	e := strconv.FormatInt(exp, 10)
	other, err := urlsign.New(key, "another label", 10*time.Minute)
	require.NoError(t, err)
	far := strconv.FormatInt(now.Add(10*time.Minute+urlsign.ClockSkew+time.Second).Unix(), 10)

	for _, tc := range []struct {
		name, sig, exp string
		at             time.Time
		parts          []string
		want           error
	}{
		{"valid", sig, e, now, []string{"a", "b"}, nil},
		{"valid to the last second", sig, e, time.Unix(exp-1, 0), []string{"a", "b"}, nil},
		{"expired", sig, e, time.Unix(exp, 0), []string{"a", "b"}, urlsign.ErrExpired},
		{"another part", sig, e, now, []string{"a", "c"}, urlsign.ErrInvalid},
		{"another expiry", sig, strconv.FormatInt(exp+1, 10), now, []string{"a", "b"}, urlsign.ErrInvalid},
		{"a padded expiry", sig, "0" + e, now, []string{"a", "b"}, urlsign.ErrInvalid},
		{"no signature", "", e, now, []string{"a", "b"}, urlsign.ErrInvalid},
		{"another purpose's key", other.Sign(exp, "a", "b"), e, now, []string{"a", "b"}, urlsign.ErrInvalid},
		{"too far ahead", s.Sign(mustInt(t, far), "a", "b"), far, now, []string{"a", "b"}, urlsign.ErrInvalid},
	} {
		_, err := s.Check(tc.sig, tc.exp, tc.at, tc.parts...)
		require.ErrorIs(t, err, tc.want, tc.name)
		if tc.want == nil {
			require.NoError(t, err, tc.name)
		}
	}
	_, err = urlsign.New([]byte("short"), "x", time.Minute)
	require.Error(t, err)
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	return n
}
