package notify

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/smtp"
	"net/url"
	"strings"
	"time"
)

// SMTPTimeout bounds one email's whole conversation with the relay.
const SMTPTimeout = 30 * time.Second

// Mailer sends digests through an SMTP relay: smtp://host:port (STARTTLS
// when the relay offers it, required when the URL carries credentials) or
// smtps://host:port (TLS from the start).
type Mailer struct {
	addr, host string
	implicit   bool
	user, pass string
	from       string
	// TLSConfig verifies the relay; nil verifies it against the system's
	// roots under its host name. Tests set their own.
	TLSConfig *tls.Config
}

// NewMailer parses SMTP_URL; "" is no mailer (nil, nil).
func NewMailer(rawURL, from string) (*Mailer, error) {
	if rawURL == "" {
		return nil, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Hostname() == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("notify: SMTP_URL must be smtp://[user:pass@]host:port or smtps://…, got %q", redact(rawURL))
	}
	m := &Mailer{host: u.Hostname(), implicit: u.Scheme == "smtps", from: from}
	port := u.Port()
	if port == "" {
		port = map[bool]string{true: "465", false: "25"}[m.implicit]
	}
	m.addr = net.JoinHostPort(m.host, port)
	if u.User != nil {
		m.user = u.User.Username()
		m.pass, _ = u.User.Password()
	}
	if strings.ContainsAny(from, "\r\n<>,") || !strings.Contains(from, "@") {
		return nil, fmt.Errorf("notify: SMTP_FROM %q is not a bare email address", from)
	}
	return m, nil
}

// redact hides a URL's password.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(unparsable)"
}

// Send emails a plain-text message to every address of to.
func (m *Mailer) Send(ctx context.Context, to []string, subject, body string) error {
	ctx, cancel := context.WithTimeout(ctx, SMTPTimeout)
	defer cancel()
	d := net.Dialer{}
	conn, err := d.DialContext(ctx, "tcp", m.addr)
	if err != nil {
		return fmt.Errorf("notify: dial SMTP relay: %w", err)
	}
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	tlsConfig := m.TLSConfig
	if tlsConfig == nil {
		tlsConfig = &tls.Config{ServerName: m.host, MinVersion: tls.VersionTLS12}
	}
	if m.implicit {
		conn = tls.Client(conn, tlsConfig)
	}
	c, err := smtp.NewClient(conn, m.host)
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("notify: SMTP greeting: %w", err)
	}
	defer func() { _ = c.Close() }()
	if !m.implicit {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(tlsConfig); err != nil {
				return fmt.Errorf("notify: SMTP STARTTLS: %w", err)
			}
		} else if m.user != "" {
			return fmt.Errorf("notify: the SMTP relay offers no STARTTLS; credentials are not sent in the clear")
		}
	}
	if m.user != "" {
		if err := c.Auth(smtp.PlainAuth("", m.user, m.pass, m.host)); err != nil {
			return fmt.Errorf("notify: SMTP auth: %w", err)
		}
	}
	if err := c.Mail(m.from); err != nil {
		return fmt.Errorf("notify: SMTP MAIL FROM: %w", err)
	}
	for _, rcpt := range to {
		if err := c.Rcpt(rcpt); err != nil {
			return fmt.Errorf("notify: SMTP RCPT TO %s: %w", rcpt, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("notify: SMTP DATA: %w", err)
	}
	msg := "From: " + m.from + "\r\nTo: " + strings.Join(to, ", ") + "\r\nSubject: " + oneLine(subject) +
		"\r\nDate: " + time.Now().UTC().Format(time.RFC1123Z) +
		"\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n" +
		strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\r\n")
	if _, err := w.Write([]byte(msg)); err != nil {
		return fmt.Errorf("notify: SMTP message: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("notify: SMTP message refused: %w", err)
	}
	return c.Quit()
}

// oneLine keeps a header value on one line.
func oneLine(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}
