package pve

import (
	"net/url"
	"strings"
)

func queryEscape(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}
