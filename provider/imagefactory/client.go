// Package imagefactory talks to a Talos Image Factory's HTTP API
// (siderolabs/image-factory docs/api.md): register a schematic
// (POST /schematics), look one up (GET /schematics/{id}) and list the
// official extensions of a Talos version
// (GET /version/{version}/extensions/official). Schematic IDs are computed
// offline by provider/talosconfig; this package only does the I/O. No
// Pulumi types.
package imagefactory

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

	"github.com/proxmoxtalos/proxmoxtalos/provider/backoff"
)

// Client is an Image Factory (or mirror) at a base URL.
type Client struct {
	// BaseURL is the factory's base URL without a trailing slash, for
	// example https://factory.talos.dev.
	BaseURL string
	// HTTP is the client to use; nil: a client with a 30 s timeout.
	HTTP *http.Client
	// UserAgent is sent with every request.
	UserAgent string
	// Attempts bounds tries of a request that failed transiently (network
	// errors, 429, 5xx); default 4. Waits double from Backoff (default 1 s),
	// up to 30 s (package backoff).
	Attempts int
	Backoff  time.Duration
}

// Error is an answer the factory gave that is not success.
type Error struct {
	Method, URL string
	Status      int
	Body        string // the factory's plain-text message, trimmed
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s %s: %d %s", e.Method, e.URL, e.Status, http.StatusText(e.Status))
	if body := e.Body; body != "" {
		if len(body) > 300 {
			body = body[:300] + "..."
		}

		msg += ": " + body
	}

	return msg
}

// IsNotFound reports whether err is the factory's 404.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// Register posts a schematic (YAML) and returns the ID the factory assigned
// and its canonical form. Registering an existing schematic is not an
// error: the factory answers the same ID.
func (c *Client) Register(ctx context.Context, schematicYAML []byte) (id, canonical string, err error) {
	var resp struct {
		ID        string `json:"id"`
		Schematic string `json:"schematic"`
	}

	body, err := c.do(ctx, http.MethodPost, "/schematics", "application/yaml", schematicYAML)
	if err != nil {
		return "", "", err
	}

	if err := json.Unmarshal(body, &resp); err != nil || resp.ID == "" {
		return "", "", fmt.Errorf("POST %s/schematics: the answer is not the factory's {\"id\": ...} JSON (%.200q)", c.base(), body)
	}

	return resp.ID, resp.Schematic, nil
}

// Get returns a registered schematic's canonical YAML; IsNotFound(err)
// when the factory does not have it.
func (c *Client) Get(ctx context.Context, id string) ([]byte, error) {
	return c.do(ctx, http.MethodGet, "/schematics/"+id, "", nil)
}

// OfficialExtensions lists the names of the official extensions the factory
// offers for a Talos version ("siderolabs/qemu-guest-agent", ...).
func (c *Client) OfficialExtensions(ctx context.Context, talosVersion string) ([]string, error) {
	body, err := c.do(ctx, http.MethodGet, "/version/"+talosVersion+"/extensions/official", "", nil)
	if err != nil {
		return nil, err
	}

	var list []struct {
		Name string `json:"name"`
	}

	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("GET %s/version/%s/extensions/official: the answer is not a JSON list of extensions: %w", c.base(), talosVersion, err)
	}

	names := make([]string, 0, len(list))
	for _, e := range list {
		names = append(names, e.Name)
	}

	return names, nil
}

func (c *Client) base() string { return strings.TrimRight(c.BaseURL, "/") }

// do sends one request, retrying transient failures, and returns the body
// of a 2xx answer.
func (c *Client) do(ctx context.Context, method, path, contentType string, payload []byte) ([]byte, error) {
	attempts, wait := c.Attempts, c.Backoff
	if attempts <= 0 {
		attempts = 4
	}

	if wait <= 0 {
		wait = time.Second
	}

	var body []byte

	loop := backoff.Loop{Policy: backoff.Policy{Initial: wait, Max: 30 * time.Second}, Attempts: attempts}
	err := loop.Run(ctx, func(ctx context.Context, _ int) (bool, error) {
		b, retry, err := c.once(ctx, method, path, contentType, payload)
		body = b

		return err == nil || !retry, err
	})

	ex, ok := backoff.AsExhausted(err)
	switch {
	case !ok:
		return body, err
	case errors.Is(ex.Cause, backoff.ErrAttempts):
		return body, ex.Last // the last answer, as it is
	default:
		return nil, fmt.Errorf("%w (gave up: %w)", ex.Last, ex.Cause)
	}
}

func (c *Client) once(ctx context.Context, method, path, contentType string, payload []byte) (body []byte, retry bool, err error) {
	url := c.base() + path

	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(payload))
	if err != nil {
		return nil, false, fmt.Errorf("image factory URL %q: %w", c.base(), err)
	}

	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}

	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}

	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}

	resp, err := hc.Do(req)
	if err != nil {
		return nil, ctx.Err() == nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer func() { _ = resp.Body.Close() }() // read to the end below; a close error changes nothing

	body, err = io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, true, fmt.Errorf("%s %s: reading the answer: %w", method, url, err)
	}

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		transient := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		return nil, transient, &Error{Method: method, URL: url, Status: resp.StatusCode, Body: strings.TrimSpace(string(body))}
	}

	return body, false, nil
}
