package files

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/urlsign"
	"github.com/appruntime/appruntime/models"
)

// URLLifetime is how long a managed-storage URL works: long enough for a
// viewer to load the document and for an extraction queued behind others
// to fetch it (the worker reads the file when the job starts), short
// enough that a URL copied out of a session stops working soon after.
const URLLifetime = 10 * time.Minute

// FilesPath is the path, below PUBLIC_API_URL, of the route that serves a
// file by its managed-storage URL: FilesPath + "/" + file id.
const FilesPath = "/api/files"

// urlKeyInfo is the HKDF label of the URL signing key: a key for this
// purpose only, whatever else SECRETS_KEY keys.
const urlKeyInfo = "appruntime files: managed-storage URL signing key v1"

// URL returns a managed-storage URL of f and when it expires.
func (s *Service) URL(f models.File) (string, time.Time) {
	expires := s.urls.Expiry(s.now())
	exp := expires.Unix()
	q := url.Values{}
	q.Set("task", f.TaskID)
	q.Set("exp", strconv.FormatInt(exp, 10))
	q.Set("sig", s.urls.Sign(exp, f.ID, f.TaskID))
	u := *s.baseURL
	u.Path = strings.TrimRight(s.baseURL.Path, "/") + FilesPath + "/" + f.ID
	u.RawPath = ""
	u.RawQuery = q.Encode()
	return u.String(), expires
}

// Ticket is what a managed-storage URL carries besides its host and path:
// the file, its task, the expiry and the signature.
type Ticket struct {
	FileID string
	TaskID string
	Exp    string // unix seconds
	Sig    string
}

// errNotOurs refuses a URL that is not a managed-storage URL of this
// deployment, whatever the reason, so a prober learns nothing from the
// message.
var errNotOurs = apperr.Forbiddenf("the URL is not a managed-storage URL of this deployment: use a url from list_files or file_preview")

// check verifies t's signature and expiry.
func (s *Service) check(t Ticket) error {
	if !models.IsID(t.FileID) || !models.IsID(t.TaskID) {
		return errNotOurs
	}
	exp, err := s.urls.Check(t.Sig, t.Exp, s.now(), t.FileID, t.TaskID)
	switch {
	case errors.Is(err, urlsign.ErrExpired):
		return apperr.Forbiddenf("the managed-storage URL expired at %s: ask list_files or file_preview for a fresh one", time.Unix(exp, 0).UTC().Format(time.RFC3339))
	case err != nil:
		return errNotOurs
	}
	return nil
}

// ParseURL reads the Ticket of a managed-storage URL of this deployment
// without checking its signature: the scheme, host and port must be
// PUBLIC_API_URL's, the path FilesPath/<id> below its path, with no user,
// fragment or other query parameter, each parameter once. Anything else is
// a forbidden error.
func (s *Service) ParseURL(raw string) (Ticket, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.User != nil || u.Fragment != "" || u.Opaque != "" || !sameOrigin(u, s.baseURL) {
		return Ticket{}, errNotOurs
	}
	prefix := strings.TrimRight(s.baseURL.EscapedPath(), "/") + FilesPath + "/"
	id, ok := strings.CutPrefix(u.EscapedPath(), prefix)
	if !ok || !models.IsID(id) {
		return Ticket{}, errNotOurs
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil || len(q) != 3 {
		return Ticket{}, errNotOurs
	}
	t := Ticket{FileID: id}
	for key, dst := range map[string]*string{"task": &t.TaskID, "exp": &t.Exp, "sig": &t.Sig} {
		v, ok := q[key]
		if !ok || len(v) != 1 {
			return Ticket{}, errNotOurs
		}
		*dst = v[0]
	}
	return t, nil
}

// sameOrigin compares scheme, host and port (an absent port is the
// scheme's default), host names without regard to case.
func sameOrigin(u, base *url.URL) bool {
	if !strings.EqualFold(u.Scheme, base.Scheme) || !strings.EqualFold(u.Hostname(), base.Hostname()) {
		return false
	}
	port := func(v *url.URL) string {
		if p := v.Port(); p != "" {
			return p
		}
		if strings.EqualFold(v.Scheme, "https") {
			return "443"
		}
		return "80"
	}
	return port(u) == port(base)
}

// VerifyURL returns the file a managed-storage URL names when the URL is
// this deployment's, intact and unexpired (403 otherwise), and the file
// still exists (404).
func (s *Service) VerifyURL(ctx context.Context, raw string) (models.File, error) {
	t, err := s.ParseURL(raw)
	if err != nil {
		return models.File{}, err
	}
	if err := s.check(t); err != nil {
		return models.File{}, err
	}
	return s.Get(ctx, t.TaskID, t.FileID)
}

// VerifyURLForTask is VerifyURL for a session of taskID: a URL of another
// task's file is refused (403), which is the rule of
// structured_data_extraction's file_url.
func (s *Service) VerifyURLForTask(ctx context.Context, raw, taskID string) (models.File, error) {
	t, err := s.ParseURL(raw)
	if err != nil {
		return models.File{}, err
	}
	if err := s.check(t); err != nil {
		return models.File{}, err
	}
	if t.TaskID != taskID {
		return models.File{}, apperr.Forbiddenf("the managed-storage URL names a file of another task: a session may use its own task's files only")
	}
	return s.Get(ctx, t.TaskID, t.FileID)
}
