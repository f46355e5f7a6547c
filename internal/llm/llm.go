// Package llm is a small client for an OpenAI-compatible chat-completions
// endpoint, used for the key-detail summary pass (LLM_BASE_URL) and for
// structured_data_extraction (EXTRACTION_BASE_URL). It asks for JSON object
// replies only, which is all its callers need, free-form or held to a JSON
// Schema, and sends documents as the API's content parts.
package llm

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Timeout bounds one completion, connection to last byte.
const Timeout = 60 * time.Second

// MaxReplyBytes caps the reply body read from the provider.
const MaxReplyBytes = 1 << 20

// Message is one chat message: text, or (for a user message) content parts
// when Parts is set.
type Message struct {
	Role    string // "system" or "user"
	Content string
	Parts   []Part
}

// MarshalJSON renders content as a string, or as an array of parts.
func (m Message) MarshalJSON() ([]byte, error) {
	var content any = m.Content
	if len(m.Parts) > 0 {
		content = m.Parts
	}
	return json.Marshal(struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	}{m.Role, content})
}

// Part is one content part of a message: text, an image, or a file (a PDF),
// the two last as data URLs.
type Part struct {
	Type     string    `json:"type"` // "text", "image_url" or "file"
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
	File     *File     `json:"file,omitempty"`
}

// ImageURL is an image part's image.
type ImageURL struct {
	URL string `json:"url"`
}

// File is a file part's file.
type File struct {
	Filename string `json:"filename"`
	FileData string `json:"file_data"` // data:<type>;base64,<bytes>
}

// TextPart returns a text part.
func TextPart(text string) Part { return Part{Type: "text", Text: text} }

// ImagePart returns an image part carrying data of contentType.
func ImagePart(contentType string, data []byte) Part {
	return Part{Type: "image_url", ImageURL: &ImageURL{URL: dataURL(contentType, data)}}
}

// FilePart returns a file part carrying data of contentType.
func FilePart(name, contentType string, data []byte) Part {
	return Part{Type: "file", File: &File{Filename: name, FileData: dataURL(contentType, data)}}
}

func dataURL(contentType string, data []byte) string {
	return "data:" + contentType + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// ErrNotJSONObject is the error of a reply whose content is not one JSON
// object: the model answered, but not as asked.
var ErrNotJSONObject = errors.New("llm: reply content is not a JSON object")

// StatusError is a provider's non-2xx answer.
type StatusError struct {
	Status  int
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("llm: provider answered %d: %s", e.Status, e.Message)
}

// Client calls one provider with one model. Its URL is deployment
// configuration, not user input, so it uses a plain HTTP client.
type Client struct {
	baseURL string
	apiKey  string
	model   string
	http    *http.Client
}

// New returns a client for the chat-completions API at baseURL (the part
// before /chat/completions, e.g. https://api.openai.com/v1). It returns nil
// when baseURL is empty: no LLM is configured.
func New(baseURL, apiKey, model string) *Client {
	if strings.TrimSpace(baseURL) == "" {
		return nil
	}
	return &Client{
		baseURL: strings.TrimRight(baseURL, "/"),
		apiKey:  apiKey,
		model:   model,
		http:    &http.Client{Timeout: Timeout},
	}
}

// WithTimeout returns a copy of c whose calls are bounded by d instead of
// Timeout; 0 leaves the bound to the caller's context (an extraction of a
// long document runs for minutes).
func (c *Client) WithTimeout(d time.Duration) *Client {
	cp := *c
	cp.http = &http.Client{Timeout: d}
	return &cp
}

type completionRequest struct {
	Model          string          `json:"model"`
	Messages       []Message       `json:"messages"`
	ResponseFormat json.RawMessage `json:"response_format"`
}

type completionReply struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// CompleteJSON sends messages with response_format json_object and returns
// the reply's content, which must be one JSON object.
func (c *Client) CompleteJSON(ctx context.Context, messages []Message) (json.RawMessage, error) {
	return c.complete(ctx, completionRequest{
		Model: c.model, Messages: messages, ResponseFormat: json.RawMessage(`{"type":"json_object"}`),
	})
}

// CompleteSchema sends messages with response_format json_schema, holding
// the reply to schema (named name), and returns the reply's content, which
// must be one JSON object; checking it against the schema is the caller's.
// model overrides the client's model when set.
func (c *Client) CompleteSchema(ctx context.Context, model, name string, schema json.RawMessage, messages []Message) (json.RawMessage, error) {
	if model == "" {
		model = c.model
	}
	format, err := json.Marshal(map[string]any{
		"type":        "json_schema",
		"json_schema": map[string]any{"name": name, "schema": schema},
	})
	if err != nil {
		return nil, fmt.Errorf("llm: marshal schema: %w", err)
	}
	return c.complete(ctx, completionRequest{Model: model, Messages: messages, ResponseFormat: format})
}

func (c *Client) complete(ctx context.Context, request completionRequest) (json.RawMessage, error) {
	body, err := json.Marshal(request)
	if err != nil {
		return nil, fmt.Errorf("llm: marshal request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("llm: build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("llm: call %s: %w", c.baseURL, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, MaxReplyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("llm: read reply: %w", err)
	}
	if len(raw) > MaxReplyBytes {
		return nil, fmt.Errorf("llm: reply larger than %d bytes", MaxReplyBytes)
	}
	var reply completionReply
	jsonErr := json.Unmarshal(raw, &reply)
	if res.StatusCode/100 != 2 {
		msg := http.StatusText(res.StatusCode)
		if jsonErr == nil && reply.Error != nil && reply.Error.Message != "" {
			msg = reply.Error.Message
		}
		return nil, &StatusError{Status: res.StatusCode, Message: truncate(msg, 200)}
	}
	if jsonErr != nil {
		return nil, fmt.Errorf("llm: reply is not JSON: %w", jsonErr)
	}
	if len(reply.Choices) == 0 {
		return nil, errors.New("llm: reply has no choices")
	}
	content := strings.TrimSpace(reply.Choices[0].Message.Content)
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(content), &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%w (finish_reason %q)", ErrNotJSONObject, reply.Choices[0].FinishReason)
	}
	return json.RawMessage(content), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
