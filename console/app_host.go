package console

import (
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/appblock"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/reply"
	"github.com/appruntime/appruntime/models"
)

// appHost is what templates/app_host.html shows on a host page (the task
// page, the reviewer's page): the agent's replies, whose app blocks
// static/task.js runs through mcphost.js on Run, and the composer.
type appHost struct {
	TaskID  string
	Replies []reply.View
	// Empty is shown when there is no reply.
	Empty string
	// AssetBase is the path an asset id is appended to (the page's own
	// asset route, which checks the same access as the page).
	AssetBase string
	// MessageAction is where the composer posts.
	MessageAction string
	// OwnOrigins are the origins an app may not ask to open (ours).
	OwnOrigins []string
	// Closed says why the composer is not shown: the task is over and its
	// agent reads no more events (task.AddUserMessage refuses them).
	Closed string
}

// newAppHost returns the host of task taskID's replies for pages under
// base ("/tasks/<id>" or "/review/tasks/<id>").
func (s *server) newAppHost(taskID, base string, replies []reply.View, empty string) appHost {
	return appHost{TaskID: taskID, Replies: replies, Empty: empty, AssetBase: base + "/assets/",
		MessageAction: base + "/messages", OwnOrigins: s.ownOrigins()}
}

// composerClosed says why a task in status takes no more messages, or ""
// when it does (task.AddUserMessage answers 409 on a completed or failed
// task).
func composerClosed(status string) string {
	switch status {
	case models.TaskCompleted:
		return "The task is completed: its agent reads no more events, so no message can be sent to it."
	case models.TaskFailed:
		return "The task has failed (or was aborted): its agent reads no more events, so no message can be sent to it."
	}
	return ""
}

// ownOrigins are the origins of this deployment (console, API, bundles):
// an app may not ask to open them, and an embed on them is not framed.
func (s *server) ownOrigins() []string {
	var out []string
	for _, u := range []string{s.ConsoleURL, s.PublicAPIURL, s.BundleBaseURL} {
		if o := originOf(u); o != "" {
			out = append(out, o)
		}
	}
	return out
}

// sendAsset answers with an app block's HTML under the asset's own policy
// (appblock.AssetHeaders: no network, inline scripts and styles, sandboxed
// to an opaque origin even when opened directly), framable by this console
// only.
func (s *server) sendAsset(c *fiber.Ctx, data []byte) error {
	c.Response().Header.Del(fiber.HeaderXFrameOptions)
	for _, h := range appblock.AssetHeaders(originOf(s.ConsoleURL)) {
		c.Set(h[0], h[1])
	}
	return c.Send(data)
}

// MaxMessageLength bounds a message a person sends the agent from a page.
const MaxMessageLength = 10000

// messageText is the composer's text (form field "message"), checked: not
// blank, at most MaxMessageLength characters.
func messageText(c *fiber.Ctx) (string, error) {
	text := c.FormValue("message")
	switch {
	case strings.TrimSpace(text) == "":
		return "", apperr.Invalidf("the message is empty")
	case !utf8.ValidString(text) || utf8.RuneCountInString(text) > MaxMessageLength:
		return "", apperr.Invalidf("a message is at most %d characters", MaxMessageLength)
	}
	return text, nil
}
