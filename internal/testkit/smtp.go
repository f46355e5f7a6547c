package testkit

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/emersion/go-smtp"
)

// Mail is a message an SMTPSink received.
type Mail struct {
	From string
	To   []string
	Data string
}

// SMTPSink is a real SMTP server (github.com/emersion/go-smtp) on
// loopback that keeps what it receives: the relay SMTP_URL names in tests.
type SMTPSink struct {
	// URL is the sink as SMTP_URL names it (smtp://127.0.0.1:port).
	URL  string
	mu   sync.Mutex
	mail []Mail
}

// NewSMTPSink starts an SMTP sink for the test's life.
func NewSMTPSink(t testing.TB) *SMTPSink {
	t.Helper()
	sink := &SMTPSink{}
	s := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &sinkSession{sink: sink}, nil }))
	s.Domain = "localhost"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	sink.URL = "smtp://" + ln.Addr().String()
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	return sink
}

// Mail returns what the sink received so far.
func (s *SMTPSink) Mail() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.mail...)
}

type sinkSession struct {
	sink *SMTPSink
	cur  Mail
}

func (s *sinkSession) Reset()        { s.cur = Mail{} }
func (s *sinkSession) Logout() error { return nil }
func (s *sinkSession) Mail(from string, _ *smtp.MailOptions) error {
	s.cur.From = from
	return nil
}
func (s *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.To = append(s.cur.To, to)
	return nil
}
func (s *sinkSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.Data = string(b)
	s.sink.mu.Lock()
	s.sink.mail = append(s.sink.mail, s.cur)
	s.sink.mu.Unlock()
	return nil
}
