// Package docs embeds the project's documentation, the Markdown files of
// this folder and of adr/, so that the balancer serves them from its binary
// at GET /docs on the admin port.
package docs

import "embed"

// FS holds docs/*.md and docs/adr/*.md.
//
//go:embed *.md adr/*.md
var FS embed.FS
