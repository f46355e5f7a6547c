package runtime

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
)

func TestCursorsAreSigned(t *testing.T) {
	t.Parallel()
	key := NewCursorKey([]byte("appruntime-test-key-0123456789ab"))
	require.Equal(t, key, NewCursorKey([]byte("appruntime-test-key-0123456789ab")), "every replica derives the same key")
	require.NotEqual(t, key, NewCursorKey(nil), "no secret: a random key")

	issued := encodeCursor(key, cursor{Binding: "b1", Op: "list", Offset: 50})
	offset, err := decodeCursor(key, issued, "b1", "list")
	require.NoError(t, err)
	require.Equal(t, 50, offset)
	offset, err = decodeCursor(key, "", "b1", "list")
	require.NoError(t, err)
	require.Zero(t, offset, "no cursor is the first page")

	body, sig, _ := strings.Cut(issued, ".")
	unsigned := base64.RawURLEncoding.EncodeToString([]byte(`{"op":"list","offset":1000000000}`))
	forgedBody := base64.RawURLEncoding.EncodeToString([]byte(`{"b":"b1","op":"list","offset":1000000000}`))
	cases := []struct{ name, cursor, binding, op, message string }{
		{"unsigned, as cursors used to be", unsigned, "b1", "list", "cursor is not one this API issued"},
		{"forged offset with an old signature", forgedBody + "." + sig, "b1", "list", "cursor is not one this API issued"},
		{"signed with another key", encodeCursor(NewCursorKey([]byte("another-key-0123456789abcdefghij")), cursor{Binding: "b1", Op: "list", Offset: 50}), "b1", "list", "cursor is not one this API issued"},
		{"signature cut short", body + "." + sig[:4], "b1", "list", "cursor is not one this API issued"},
		{"not base64", "!!!." + sig, "b1", "list", "cursor is not one this API issued"},
		{"another binding's", issued, "b2", "list", "cursor is not one this API issued"},
		{"another op's", issued, "b1", "other", `cursor belongs to op "list", not "other"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := decodeCursor(key, tc.cursor, tc.binding, tc.op)
			require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%v", err)
			_, _, msg := apperr.Public(err)
			require.Equal(t, tc.message, msg)
		})
	}
}
