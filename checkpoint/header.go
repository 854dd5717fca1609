package checkpoint

import "strings"

// HeaderCarrier lets OpenTelemetry propagators read and write the headers of
// the NATS message an event travels in (it implements
// propagation.TextMapCarrier): publishers write the W3C traceparent header
// through it and recall's workers read it. Convert a nats.Header to it
// (HeaderCarrier(msg.Header)); the type is spelled as a map so that the wire
// format imports neither NATS nor OpenTelemetry.
//
// Keys are written as given (traceparent, in lower case as W3C Trace Context
// spells it) and read in any case, since NATS headers are case-sensitive and
// other publishers may spell them otherwise.
type HeaderCarrier map[string][]string

// Get returns the first value of key.
func (c HeaderCarrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	for k, v := range c {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

// Set sets key to value.
func (c HeaderCarrier) Set(key, value string) { c[key] = []string{value} }

// Keys returns the keys of the header.
func (c HeaderCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
