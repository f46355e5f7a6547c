package console

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/capability"
	"github.com/appruntime/appruntime/internal/claim"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/reply"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/models"
)

// reviewPath is the reviewer's home: the only pages a reviewer sees.
const reviewPath = "/review"

// maxViewerPages bounds the pages of one document the viewer shows as text.
const maxViewerPages = 50

// maxViewerCells bounds the cells of one sheet's table the viewer's page
// holds (a page's 128 KiB of CSV may be 130,000 empty cells).
const maxViewerCells = 20_000

// reviewRoutes mounts the reviewer's host pages, for reviewers and admins.
func (s *server) reviewRoutes(app *fiber.App) {
	g := app.Group(reviewPath, s.loadSession, s.checkCSRF, s.requireReviewer)
	g.Get("", s.showReview)
	g.Post("/next", s.reviewNext)
	g.Get("/tasks/:id", s.showReviewTask)
	g.Post("/tasks/:id/session", s.openReviewSession)
	g.Post("/tasks/:id/abort", s.abortReview)
	g.Post("/tasks/:id/translation", s.reviewTranslation)
	g.Post("/tasks/:id/citations", s.reviewCitations)
	g.Get("/tasks/:id/assets/:asset", s.showReviewAsset)
	g.Get("/tasks/:id/files/:file/pages/:page", s.showReviewPageImage)
	g.Post("/tasks/:id/messages", s.sendReviewMessage)
}

// reviewHome is the review page's data.
type reviewHome struct {
	Nothing bool // the last "Review next" found nothing
	// Held are the claims the reviewer holds when "Review next" met the
	// workspace's claim limit: finish or put back one of them first.
	Held []claim.HeldClaim
}

// showReview answers GET /review: the "Review next" button.
func (s *server) showReview(c *fiber.Ctx) error {
	return s.render(c, fiber.StatusOK, "review", "Review", "review", reviewHome{})
}

// wantsJSON reports whether the host script (not a form) is asking.
func wantsJSON(c *fiber.Ctx) bool {
	return strings.Contains(c.Get(fiber.HeaderAccept), fiber.MIMEApplicationJSON)
}

// reviewNext answers POST /review/next: it claims the next parked task for
// the signed-in reviewer (claim.Queue.Next) and opens it. The host script
// (request_next_review) asks for JSON and navigates itself.
func (s *server) reviewNext(c *fiber.Ctx) error {
	me := adminOf(c)
	claim, err := s.Queue.Next(c.UserContext(), me.WorkspaceID, me.ID)
	if held, ok := heldClaimsOf(err); ok {
		if wantsJSON(c) {
			// The host script's request_next_review reads the API's shape.
			_, _, msg := apperr.Public(err)
			body := fiber.Map{"error": msg}
			for k, v := range apperr.DetailOf(err) {
				body[k] = v
			}
			return c.Status(fiber.StatusConflict).JSON(body)
		}
		return s.render(c, fiber.StatusConflict, "review", "Review", "review", reviewHome{Held: held})
	}
	if err != nil {
		return err
	}
	if claim == nil {
		if wantsJSON(c) {
			return c.JSON(fiber.Map{"task": nil, "message": "nothing to review"})
		}
		return s.render(c, fiber.StatusOK, "review", "Review", "review", reviewHome{Nothing: true})
	}
	to := reviewPath + "/tasks/" + claim.TaskID
	if wantsJSON(c) {
		return c.JSON(fiber.Map{"task": claim, "url": to})
	}
	return c.Redirect(to, fiber.StatusSeeOther)
}

// heldClaimsOf returns the claims a claim_limit_reached conflict names.
func heldClaimsOf(err error) ([]claim.HeldClaim, bool) {
	d := apperr.DetailOf(err)
	held, ok := d["held_claims"].([]claim.HeldClaim)
	return held, ok && d["code"] == claim.ClaimLimitReached
}

// viewerPage is one page of a document as the viewer shows it: its image
// (documents with page images) with its text on top, as OCR's words at
// their boxes on a page without a text layer.
type viewerPage struct {
	Number int
	Text   string
	OCR    bool
	Words  []document.Word
	// Busy says its text was not read: every page reader of its
	// workspace's share or of the console was busy past DOCUMENT_RENDER_WAIT.
	Busy bool
	// Refused is why the page was not read (a budget's or a broken file's
	// message): the page says so rather than the task not opening.
	Refused string
	// Table is a sheet's (or a CSV file's) page as rows of cells
	// (document.Table), shown as a paged table under Sheet, its name.
	Table     bool
	Sheet     string
	Rows      [][]string
	Truncated bool
}

// viewerDocument is one file of the task in the viewer. Images is the URL
// of its pages' images (add the page number and ?size=thumb or page);
// empty for a document without them (text, sheets).
type viewerDocument struct {
	ID, Name, URL string
	Images        string
	Pages         []viewerPage
	More          int // pages past maxViewerPages, not shown
}

// reviewTaskPage is the reviewer's host page of one claimed task.
type reviewTaskPage struct {
	Task      task.Detail
	StepID    string // the artifact step ("" when the task has none)
	Pending   bool   // the step's await is pending: the artifact opens at once
	Documents []viewerDocument
	KeyValues []keyValue
	// Apps are the agent's final replies: their app blocks run on Run.
	Apps appHost
}

type keyValue struct{ Key, Value string }

// reviewTask loads a task the signed-in reviewer holds (an admin may look
// at any task of the workspace).
func (s *server) reviewTask(c *fiber.Ctx) (task.Detail, error) {
	me := adminOf(c)
	id := c.Params("id")
	if me.Role != models.RoleAdmin {
		if err := s.Queue.Holds(c.UserContext(), me.WorkspaceID, me.ID, id); err != nil {
			return task.Detail{}, err
		}
	}
	return s.Tasks.Inspect(c.UserContext(), me.WorkspaceID, id)
}

// showReviewTask answers GET /review/tasks/:id: the task's documents (text
// per page), its key details and the artifact's frame, which the host
// script mounts at once while the await is pending.
func (s *server) showReviewTask(c *fiber.Ctx) error {
	d, err := s.reviewTask(c)
	if err != nil {
		return err
	}
	p := reviewTaskPage{Task: d}
	for _, st := range d.Steps {
		if st.Kind == models.StepAppTool {
			p.StepID = st.ID
		}
	}
	pending, err := s.Queue.PendingStep(c.UserContext(), d.ID)
	if err != nil {
		return err
	}
	if pending != "" {
		p.StepID, p.Pending = pending, true
	}
	for k, v := range d.KeyValues {
		p.KeyValues = append(p.KeyValues, keyValue{Key: k, Value: strings.Trim(string(v), `"`)})
	}
	if s.Capabilities != nil {
		if p.Documents, err = s.viewerDocuments(c, d.ID); err != nil {
			return err
		}
	}
	replies, err := s.Replies.List(c.UserContext(), d.ID)
	if err != nil {
		return err
	}
	replies = slices.DeleteFunc(replies, func(r reply.View) bool { return !r.Final })
	p.Apps = s.newAppHost(d.ID, reviewPath+"/tasks/"+d.ID, replies, "The agent has not given its final reply.")
	p.Apps.Closed = composerClosed(d.Status)
	c.Set(fiber.HeaderContentSecurityPolicy, reviewCSP(s.bundleOrigin))
	return s.render(c, fiber.StatusOK, "review_task", "Review "+shortID(d.ID), "review", p)
}

// viewerDocuments reads the task's files page by page (file_preview).
func (s *server) viewerDocuments(c *fiber.Ctx, taskID string) ([]viewerDocument, error) {
	list, err := s.Capabilities.ListFiles(c.UserContext(), taskID)
	if err != nil {
		return nil, err
	}
	docs := make([]viewerDocument, 0, len(list.Files))
	for _, f := range list.Files {
		doc := viewerDocument{ID: f.FileID, Name: f.Name, URL: f.URL, More: max(f.Pages-maxViewerPages, 0)}
		if f.ContentType == document.TypePDF || document.IsImage(f.ContentType) {
			doc.Images = reviewPath + "/tasks/" + taskID + "/files/" + f.FileID + "/pages/"
		}
		for n := 1; n <= min(f.Pages, maxViewerPages); n++ {
			page := n
			pv, err := s.Capabilities.FilePreview(c.UserContext(), taskID, capability.PreviewParams{FileID: f.FileID, Page: &page})
			if apperr.Is(err, apperr.Unavailable) {
				// The page readers are busy (capability's gate): the page
				// shows without its text rather than the task not at all.
				doc.Pages = append(doc.Pages, viewerPage{Number: n, Busy: true})
				continue
			}
			if apperr.Is(err, apperr.OverBudget) || apperr.Is(err, apperr.Invalid) || apperr.Is(err, apperr.UnsupportedMedia) {
				// A refused page (a sheet bomb past its budget) says why.
				_, _, msg := apperr.Public(err)
				doc.Pages = append(doc.Pages, viewerPage{Number: n, Refused: msg})
				continue
			}
			if err != nil {
				return nil, err
			}
			vp := viewerPage{Number: n, Text: pv.Text, OCR: pv.OCR, Words: pv.Words}
			if isSheet(f.ContentType) {
				vp.Sheet = cmp.Or(pv.Sheet, f.Name)
				rows, err := document.Table(document.Text{Text: pv.Text, Truncated: pv.Truncated})
				vp.Rows, vp.Truncated = firstCells(rows, maxViewerCells)
				vp.Table, vp.Truncated = err == nil, vp.Truncated || pv.Truncated
			}
			doc.Pages = append(doc.Pages, vp)
		}
		docs = append(docs, doc)
	}
	return docs, nil
}

// firstCells is the rows of rows that hold at most limit cells in all (an
// empty row counts as one), and whether rows held more.
func firstCells(rows [][]string, limit int) ([][]string, bool) {
	for i, row := range rows {
		if limit -= max(len(row), 1); limit < 0 {
			return rows[:i], true
		}
	}
	return rows, false
}

// isSheet says the viewer shows a file of contentType as tables.
func isSheet(contentType string) bool {
	return contentType == document.TypeXLSX || contentType == document.TypeCSV
}

// reviewSession is what the host script mounts the artifact with; on a
// renewal it takes the session token and expiry of Init to the bundle.
type reviewSession struct {
	Init              json.RawMessage `json:"init"`
	SessionID         string          `json:"session_id"`
	BundleURL         string          `json:"bundle_url"`
	DefaultFullscreen bool            `json:"default_fullscreen"`
	AwaitPending      bool            `json:"await_pending"`
}

// openReviewSession answers POST /review/tasks/:id/session (from the host
// script, with the CSRF header): it mints a session on the task's artifact
// step for the reviewer and returns the init message and display settings,
// read live. The host script also posts it to answer the SDK's
// renew_session bridge message, with {"replaces": SESSION_ID} naming the
// reviewer's session it handed the bundle, which the new one replaces (as
// the admin's artifact page does, renewArtifactSession).
func (s *server) openReviewSession(c *fiber.Ctx) error {
	d, err := s.reviewTask(c)
	if err != nil {
		return err
	}
	stepID := c.Query("step")
	if !models.IsID(stepID) {
		return apperr.Invalidf("step must be the artifact step's id")
	}
	var req renewRequest
	if len(bytes.TrimSpace(c.Body())) > 0 {
		if err := strictjson.Unmarshal(c.Body(), &req); err != nil {
			return apperr.Invalidf("the body is {} or {\"replaces\": SESSION_ID}: %v", err)
		}
	}
	if req.Replaces != "" && !models.IsID(req.Replaces) {
		return apperr.Invalidf("replaces must be a session id")
	}
	me := adminOf(c)
	// Bound to the task the reviewer holds: a step of another task is
	// refused before any session is minted (a mint may end another
	// reviewer's live session on its task).
	desc, err := s.Artifacts.Mint(c.UserContext(), artifact.MintRequest{WorkspaceID: me.WorkspaceID, UserID: me.ID, StepID: stepID, TaskID: d.ID, Replaces: req.Replaces})
	if err != nil {
		return err
	}
	// The reviewer's page asks the reviewer for a reason an action
	// requires (request_reason): docs/bundle-authors.md.
	m := desc.Init()
	m.HostPrompts = []string{"reason"}
	init, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("console: encode init message: %w", err)
	}
	return c.JSON(reviewSession{Init: init, SessionID: desc.SessionID, BundleURL: desc.BundleURL, DefaultFullscreen: desc.DefaultFullscreen, AwaitPending: desc.AwaitPending})
}

// abortReview answers POST /review/tasks/:id/abort: the reviewer puts the
// task back in the queue (abort_review_task).
func (s *server) abortReview(c *fiber.Ctx) error {
	me := adminOf(c)
	if err := s.Queue.Abort(c.UserContext(), me.WorkspaceID, me.ID, c.Params("id")); err != nil {
		return err
	}
	if wantsJSON(c) {
		return c.JSON(fiber.Map{"released": true, "url": reviewPath})
	}
	return c.Redirect(reviewPath+"?notice=review_aborted", fiber.StatusSeeOther)
}

// reviewTranslation answers POST /review/tasks/:id/translation {file_id,
// page, target_language}: the cached translation of one page for the
// viewer's overlay (get_translation, not billed).
func (s *server) reviewTranslation(c *fiber.Ctx) error {
	d, err := s.reviewTask(c)
	if err != nil {
		return err
	}
	if s.Capabilities == nil {
		return apperr.NotImplementedf("this deployment keeps no files")
	}
	var p capability.TranslationParams
	if err := strictjson.Unmarshal(c.Body(), &p); err != nil {
		return apperr.Invalidf("body must be {file_id, page, target_language}: %s", err)
	}
	out, err := s.Capabilities.GetTranslation(c.UserContext(), d.ID, p)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// reviewCSP is the reviewer's page's policy: pageCSP, except that it frames
// the bundle origin (the artifact) and the console's own asset route (each
// app block's HTML is served under its own sandboxed no-network policy,
// sendAsset).
func reviewCSP(bundleOrigin string) string {
	frame := "'self'"
	if bundleOrigin != "" {
		frame = bundleOrigin + " 'self'"
	}
	return strings.Replace(pageCSP, "frame-src 'none'", "frame-src "+frame, 1)
}

// showReviewPageImage answers GET /review/tasks/:id/files/:file/pages/:page
// ?size=thumb|page for the reviewer holding the task (or an admin): the
// page's PNG (capability.PageImage: rendered on the first request, then
// from the blob store). A file's bytes never change under its id, so the
// browser may keep the image.
func (s *server) showReviewPageImage(c *fiber.Ctx) error {
	d, err := s.reviewTask(c)
	if err != nil {
		return err
	}
	if s.Capabilities == nil {
		return apperr.New(apperr.NotImplemented, "this console does not read task files")
	}
	size, ok := document.Sizes[c.Query("size", "page")]
	if !ok {
		return apperr.Invalidf("size must be thumb or page, got %q", c.Query("size"))
	}
	page, err := strconv.Atoi(c.Params("page"))
	if err != nil {
		return apperr.Invalidf("the page must be a page number, got %q", c.Params("page"))
	}
	img, err := s.Capabilities.PageImage(c.UserContext(), d.ID, c.Params("file"), page, size)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "image/png")
	c.Set(fiber.HeaderCacheControl, "private, max-age=86400, immutable")
	return c.Send(img)
}

// showReviewAsset answers GET /review/tasks/:id/assets/:asset for the
// reviewer holding the task (or an admin): the HTML of an app block of one
// of the task's replies (sendAsset).
func (s *server) showReviewAsset(c *fiber.Ctx) error {
	d, err := s.reviewTask(c)
	if err != nil {
		return err
	}
	data, err := s.Replies.TaskAsset(c.UserContext(), adminOf(c).WorkspaceID, d.ID, c.Params("asset"))
	if err != nil {
		return err
	}
	return s.sendAsset(c, data)
}

// sendReviewMessage answers POST /review/tasks/:id/messages (form field
// "message") for the reviewer holding the task: the composer's text,
// perhaps filled by an app's ui/message, becomes a user_message event the
// agent reads like any other.
func (s *server) sendReviewMessage(c *fiber.Ctx) error {
	d, err := s.reviewTask(c)
	if err != nil {
		return err
	}
	text, err := messageText(c)
	if err != nil {
		return err
	}
	me := adminOf(c)
	if err := s.Tasks.AddUserMessage(c.UserContext(), me.WorkspaceID, d.ID, me.actor(), text); err != nil {
		return err
	}
	return redirectTo(c, reviewPath+"/tasks/"+d.ID, "message_sent")
}
