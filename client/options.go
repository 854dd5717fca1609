package client

import (
	"errors"
	"net/http"
)

// Option configures a Client in New.
type Option func(*Client) error

// WithHTTPClient makes the Client send its requests with hc, for its
// transport, proxy or TLS settings. A timeout set on hc bounds every call,
// exports included; prefer the context of each call. Defaults to a client
// of its own, without a timeout, on http.DefaultTransport.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) error {
		if hc == nil {
			return errors.New("client: WithHTTPClient: the http.Client is nil: pass one, or leave the option out for the default")
		}
		c.hc = hc
		return nil
	}
}

// WithUserAgent sets the User-Agent header of every request. Defaults to
// DefaultUserAgent.
func WithUserAgent(userAgent string) Option {
	return func(c *Client) error {
		if userAgent == "" {
			return errors.New("client: WithUserAgent: the user agent is empty: leave the option out for the default")
		}
		c.userAgent = userAgent
		return nil
	}
}
