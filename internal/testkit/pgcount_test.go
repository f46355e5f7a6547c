package testkit

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// message is a frontend message of type typ (0: untyped, as the startup
// messages are).
func message(typ byte, body ...string) []byte {
	var payload []byte
	for _, b := range body {
		payload = append(payload, b...)
	}
	var out []byte
	if typ != 0 {
		out = append(out, typ)
	}
	return append(binary.BigEndian.AppendUint32(out, uint32(4+len(payload))), payload...)
}

// The counter reads the stream however it is cut: an SSL request then the
// startup message, simple queries (a ping apart, a BEGIN a transaction), and
// extended-protocol executions named by their prepared statement.
func TestPGCounterReadsTheFrontendProtocolAcrossReads(t *testing.T) {
	t.Parallel()
	code := func(c uint32) string { return string(binary.BigEndian.AppendUint32(nil, c)) }
	var stream []byte
	for _, m := range [][]byte{
		message(0, code(sslRequestCode)),
		message(0, code(196608), "user\x00postgres\x00\x00"),
		message('Q', "-- ping\x00"),
		message('Q', "begin\x00"),
		message('P', "s1\x00SELECT 1\x00", "\x00\x00"),
		message('B', "\x00s1\x00", "\x00\x00\x00\x00\x00\x00"),
		message('E', "\x00\x00\x00\x00\x00"),
		message('P', "\x00SELECT 2\x00", "\x00\x00"),
		message('B', "\x00\x00", "\x00\x00\x00\x00\x00\x00"),
		message('E', "\x00\x00\x00\x00\x00"),
		message('B', "\x00s1\x00", "\x00\x00\x00\x00\x00\x00"),
		message('E', "\x00\x00\x00\x00\x00"),
		message('S'),
		message('Q', "COMMIT\x00"),
	} {
		stream = append(stream, m...)
	}
	for _, cut := range []int{1, 3, 7, len(stream)} {
		p := &PGCounter{}
		r := frontendReader{startup: true, counter: p, prepared: map[string]string{}}
		for i := 0; i < len(stream); i += cut {
			r.feed(stream[i:min(i+cut, len(stream))])
		}
		require.Equal(t, PGCount{Statements: 5, Transactions: 1, Pings: 1}, p.Count(), "cut every %d bytes", cut)
		require.Equal(t, []string{"begin", "SELECT 1", "SELECT 2", "SELECT 1", "COMMIT"}, p.Statements(0))
		require.Equal(t, []string{"COMMIT"}, p.Statements(4))
	}
}
