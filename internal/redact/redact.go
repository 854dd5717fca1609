// Package redact hides the credentials of connection strings before they
// are printed: in flag help, error messages, banners and logs. It is the
// one redactor of the tree.
package redact

import (
	"net/url"
	"strings"
)

// mask replaces a secret.
const mask = "xxxxx"

// ConnString returns s with its secrets masked. s is a URL (Postgres, NATS,
// HTTP: the password, a user part that is a NATS token, and query
// parameters that carry a password, token or secret are masked) or a libpq
// keyword/value string (`host=db password=…`: the values of password-like
// keywords are masked). What cannot be parsed is not printed at all.
func ConnString(s string) string {
	if s == "" {
		return ""
	}
	if strings.Contains(s, "://") {
		return redactURL(s)
	}
	return redactKeywords(s)
}

// secretKey reports whether a parameter or keyword names a secret.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"pass", "token", "secret", "nkey", "jwt", "key"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(an unparsable URL)"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), mask)
		} else if strings.HasPrefix(u.Scheme, "nats") || u.Scheme == "tls" || u.Scheme == "ws" || u.Scheme == "wss" {
			// NATS reads a user part without a password as a token.
			u.User = url.User(mask)
		}
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			return "(an unparsable URL)"
		}
		changed := false
		for k := range q {
			if secretKey(k) {
				q[k] = []string{mask}
				changed = true
			}
		}
		if changed {
			u.RawQuery = encodeInOrder(u.RawQuery, q)
		}
	}
	return u.String()
}

// encodeInOrder re-encodes a query with q's values, keeping the order of
// the parameters in raw.
func encodeInOrder(raw string, q url.Values) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, part := range strings.Split(raw, "&") {
		k, _, _ := strings.Cut(part, "=")
		k, err := url.QueryUnescape(k)
		if err != nil || seen[k] {
			continue
		}
		seen[k] = true
		for _, v := range q[k] {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(url.QueryEscape(k) + "=" + url.QueryEscape(v))
		}
	}
	return b.String()
}

// redactKeywords parses a libpq keyword/value string (keyword = value,
// values optionally single-quoted with backslash escapes) and writes it
// back with secret values masked.
func redactKeywords(s string) string {
	var out []string
	i, n := 0, len(s)
	skipSpace := func() {
		for i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
	}
	for {
		skipSpace()
		if i >= n {
			break
		}
		start := i
		for i < n && s[i] != '=' && s[i] != ' ' && s[i] != '\t' {
			i++
		}
		key := s[start:i]
		skipSpace()
		if key == "" || i >= n || s[i] != '=' {
			return "(an unparsable connection string)"
		}
		i++ // '='
		skipSpace()
		var val strings.Builder
		if i < n && s[i] == '\'' {
			i++
			closed := false
			for i < n {
				c := s[i]
				if c == '\\' && i+1 < n {
					val.WriteByte(s[i+1])
					i += 2
					continue
				}
				if c == '\'' {
					closed = true
					i++
					break
				}
				val.WriteByte(c)
				i++
			}
			if !closed {
				return "(an unparsable connection string)"
			}
		} else {
			for i < n && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' {
				if s[i] == '\\' && i+1 < n {
					i++
				}
				val.WriteByte(s[i])
				i++
			}
		}
		v := val.String()
		if secretKey(key) {
			v = mask
		} else if v == "" || strings.ContainsAny(v, " '\\\t") {
			v = "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
		}
		out = append(out, key+"="+v)
	}
	return strings.Join(out, " ")
}
