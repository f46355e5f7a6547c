// Package llm is a small client for an OpenAI-compatible chat-completions
// endpoint (LLM_BASE_URL), used for the key-detail summary pass. It asks for
// JSON object replies only, which is all its callers need.
package llm

import (
	"bytes"
	"context"
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

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // "system" or "user"
	Content string `json:"content"`
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
	body, err := json.Marshal(completionRequest{
		Model: c.model, Messages: messages, ResponseFormat: json.RawMessage(`{"type":"json_object"}`),
	})
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
		return nil, fmt.Errorf("llm: provider answered %d: %s", res.StatusCode, truncate(msg, 200))
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
		return nil, fmt.Errorf("llm: reply content is not a JSON object (finish_reason %q)", reply.Choices[0].FinishReason)
	}
	return json.RawMessage(content), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
