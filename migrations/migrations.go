// Package migrations holds recall's schema as goose SQL migrations,
// embedded in the binary. store.Migrate applies them together with River's.
package migrations

import "embed"

// FS holds the migration files.
//
//go:embed *.sql
var FS embed.FS
