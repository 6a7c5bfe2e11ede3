package imagefactory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agext/levenshtein"
)

// UnknownExtensionsError lists extensions a factory does not offer for a
// Talos version, each with the official names that look like it.
type UnknownExtensionsError struct {
	Factory, Talos string
	Missing        []string
	// Like maps a missing name to the closest official names (may be empty).
	Like map[string][]string
}

func (e *UnknownExtensionsError) Error() string {
	parts := make([]string, 0, len(e.Missing))
	for _, m := range e.Missing {
		s := fmt.Sprintf("%q", m)
		if like := e.Like[m]; len(like) > 0 {
			s += " (did you mean " + strings.Join(like, " or ") + "?)"
		}
		parts = append(parts, s)
	}
	noun := "extension"
	if len(parts) > 1 {
		noun = "extensions"
	}
	return fmt.Sprintf("image factory %s has no official %s %s for Talos %s, so it cannot build the images: "+
		"use the names listed at %s/version/%s/extensions/official", e.Factory, noun, strings.Join(parts, ", "),
		e.Talos, e.Factory, e.Talos)
}

// CheckExtensions asks the factory for the official extensions of a Talos
// release (a tag such as v1.12.5) and returns an *UnknownExtensionsError
// naming those of names it lacks, or the error of the listing itself.
func (c *Client) CheckExtensions(ctx context.Context, talosTag string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	official, err := c.OfficialExtensions(ctx, talosTag)
	if err != nil {
		return fmt.Errorf("image factory %s: listing the official extensions of Talos %s: %w", c.base(), talosTag, err)
	}
	e := &UnknownExtensionsError{Factory: c.base(), Talos: talosTag, Like: map[string][]string{}}
	for _, n := range names {
		if !slices.Contains(official, n) {
			e.Missing = append(e.Missing, n)
			e.Like[n] = closest(n, official)
		}
	}
	if len(e.Missing) > 0 {
		return e
	}
	return nil
}

// closest returns up to three official names, nearest first, that contain the short name
// of want ("iscsi" in "siderolabs/iscsi-tools") or are a few typos from it.
func closest(want string, official []string) []string {
	short := func(s string) string { return s[strings.LastIndex(s, "/")+1:] }
	w := strings.ToLower(short(want))
	type hit struct {
		name string
		dist int
	}
	var hits []hit
	for _, o := range official {
		s := strings.ToLower(short(o))
		d := levenshtein.Distance(w, s, nil)
		if w != "" && (strings.Contains(s, w) || strings.Contains(w, s)) || d <= max(2, len(w)/4) {
			hits = append(hits, hit{o, d})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return a.dist - b.dist })
	out := []string{}
	for i := 0; i < len(hits) && i < 3; i++ {
		out = append(out, hits[i].name)
	}
	return out
}

// PreviewWait bounds a preview's question to the factory, retries
// included: a factory that does not answer must not hold up a preview.
const PreviewWait = 20 * time.Second

// CheckExtensionsOrWarn is CheckExtensions for a preview, which may run
// offline: an unknown extension is an error; a factory that does not answer
// within PreviewWait only yields a warning (the create checks again).
func (c *Client) CheckExtensionsOrWarn(ctx context.Context, talosTag string, names []string) (warning string, err error) {
	ctx, cancel := context.WithTimeout(ctx, PreviewWait)
	defer cancel()

	err = c.CheckExtensions(ctx, talosTag, names)

	var unknown *UnknownExtensionsError
	if err != nil && !errors.As(err, &unknown) {
		return fmt.Sprintf("extensions not checked: %v", err), nil
	}

	return "", err
}
