package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// DefaultUserAgent is the User-Agent header a Client sends unless
// WithUserAgent sets another.
const DefaultUserAgent = "recall-go-client"

// Client calls recall's HTTP API with one bearer token. It is safe for
// concurrent use.
type Client struct {
	base      string // scheme://host[/prefix], without a trailing slash
	token     string
	hc        *http.Client
	userAgent string
}

// New returns a Client for the API at baseURL (such as
// http://127.0.0.1:8080, or https://example.com/recall behind a prefix)
// that authenticates with token, a bearer JWT whose sub names the user it
// acts for (or with the recall:service scope, any user). `recall token
// USER` prints one.
func New(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	switch {
	case !strings.Contains(baseURL, "://"):
		return nil, fmt.Errorf("client: the base URL %q must start with http:// or https://, such as http://127.0.0.1:8080", baseURL)
	case err != nil:
		return nil, fmt.Errorf("client: the base URL %q is not a URL: %w", baseURL, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("client: the base URL %q must start with http:// or https://, such as http://127.0.0.1:8080", baseURL)
	case u.Host == "":
		return nil, fmt.Errorf("client: the base URL %q has no host: use the API's address, such as http://127.0.0.1:8080", baseURL)
	case u.User != nil:
		return nil, errors.New("client: the base URL must not hold credentials: pass the bearer token as token")
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("client: the base URL %q must not have a query or fragment", baseURL)
	case token == "":
		return nil, errors.New("client: the token is empty: pass a bearer JWT (`recall token USER` prints one)")
	}
	u.Path, u.RawPath = strings.TrimRight(u.Path, "/"), strings.TrimRight(u.RawPath, "/")
	c := &Client{base: u.String(), token: token, hc: &http.Client{}, userAgent: DefaultUserAgent}
	for _, opt := range opts {
		if err := opt(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// userPath returns the escaped path of a user's routes.
func userPath(userID string) (string, error) {
	if userID == "" {
		return "", errors.New("client: the user ID is empty")
	}
	return "/v1/users/" + url.PathEscape(userID), nil
}

// conversationPath returns the escaped path of a conversation's routes.
func conversationPath(userID, conversationID string) (string, error) {
	p, err := userPath(userID)
	if err != nil {
		return "", err
	}
	if conversationID == "" {
		return "", errors.New("client: the conversation ID is empty")
	}
	return p + "/conversations/" + url.PathEscape(conversationID), nil
}

// send makes a request and returns the response when its status is a
// success; otherwise it returns the answer as an *APIError. in, when not
// nil, is sent as the JSON body. The caller closes the body.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, in any, accept string) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("client: encode the request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	target := c.base + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", c.userAgent)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err) // a *url.Error with the method and URL
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, apiError(resp)
	}
	return resp, nil
}

// do makes a request and decodes the JSON answer into out, unless out is
// nil.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	resp, err := c.send(ctx, method, path, query, in, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return fmt.Errorf("client: decode the answer of %s %s: %w", method, c.base+path, err)
		}
	}
	// Read what is left, so that the connection is reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	return nil
}
