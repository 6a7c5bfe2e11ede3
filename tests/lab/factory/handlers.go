package factory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/blang/semver/v4"
)

var schematicIDPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// routes are the HTTP frontend's user-facing routes that the lab needs
// (image-factory internal/frontend/http/http.go).
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /schematics", s.handleSchematicCreate)
	mux.HandleFunc("GET /schematics/{schematic}", s.handleSchematicGet)
	mux.HandleFunc("GET /version/{version}/extensions/official", s.handleOfficialExtensions)
	mux.HandleFunc("GET /image/{schematic}/{version}/{path}", s.handleImage) // and HEAD

	return mux
}

// httpError answers as the factory does: a plain-text body with a trailing
// newline (http.Error).
func httpError(w http.ResponseWriter, msg string, code int) {
	http.Error(w, msg, code)
}

// handleSchematicCreate is POST /schematics (configuration.go
// handleSchematicCreate): parse strictly, validate, store, answer 201 with
// the ID and the canonical body. Registering twice is not an error.
func (s *Server) handleSchematicCreate(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<20))
	if err != nil {
		httpError(w, "internal server error", http.StatusInternalServerError)
		return
	}

	sch, err := ParseSchematic(data)
	if err == nil {
		err = sch.Validate()
	}

	if err != nil {
		s.logf("image factory: POST /schematics refused: %v", err)
		httpError(w, err.Error(), http.StatusBadRequest)

		return
	}

	id, canonical, err := s.register(sch)
	if err != nil {
		httpError(w, err.Error(), http.StatusBadRequest)
		return
	}

	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(struct {
		ID        string `json:"id"`
		Schematic string `json:"schematic"`
	}{id, string(canonical)})
}

// handleSchematicGet is GET /schematics/{id}: the canonical YAML, or 404
// "schematic not found".
func (s *Server) handleSchematicGet(w http.ResponseWriter, r *http.Request) {
	sch, err := s.lookup(r.PathValue("schematic"))
	if err != nil {
		httpError(w, "schematic not found", http.StatusNotFound)
		return
	}

	canonical, err := sch.Marshal()
	if err != nil {
		httpError(w, "internal server error", http.StatusInternalServerError)
		return
	}

	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(canonical)
}

// extensionInfo is image-factory pkg/client ExtensionInfo.
type extensionInfo struct {
	Name        string `json:"name"`
	Ref         string `json:"ref"`
	Digest      string `json:"digest"`
	Author      string `json:"author"`
	Description string `json:"description"`
}

// handleOfficialExtensions is GET /version/{version}/extensions/official
// (meta.go). A malformed version is an unclassified error there: 500.
// Refs and digests are the lab's own (nothing is pulled).
func (s *Server) handleOfficialExtensions(w http.ResponseWriter, r *http.Request) {
	v, err := parseVersion(r.PathValue("version"))
	if err != nil {
		httpError(w, "internal server error", http.StatusInternalServerError)
		return
	}

	s.mu.Lock()
	names := append([]string(nil), s.extensions...)
	s.mu.Unlock()

	out := make([]extensionInfo, 0, len(names))
	for _, n := range names {
		out = append(out, extensionInfo{
			Name: n, Ref: "ghcr.io/" + n + ":v" + v.String(), Author: "Sidero Labs",
			Digest: "sha256:" + strings.Repeat("0", 64), Description: "lab extension " + n,
		})
	}

	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// handleImage answers a boot asset download (image.go handleImage) without
// a body worth having: the lab builds no images.
func (s *Server) handleImage(w http.ResponseWriter, r *http.Request) {
	if err := s.image(r.PathValue("schematic"), r.PathValue("version"), r.PathValue("path")); err != nil {
		var he *HTTPError
		if errors.As(err, &he) {
			httpError(w, he.Message, he.Status)
			return
		}

		httpError(w, "internal server error", http.StatusInternalServerError)

		return
	}

	body := fmt.Sprintf("lab image %s/%s/%s\n", r.PathValue("schematic"), r.PathValue("version"), r.PathValue("path"))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", r.PathValue("path")))
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))

	if r.Method != http.MethodHead {
		_, _ = io.WriteString(w, body)
	}
}

// HTTPError is the factory's answer to a request that fails.
type HTTPError struct {
	Status  int
	Message string
}

// Error is the status line as wget prints it ("404 Not Found").
func (e *HTTPError) Error() string {
	return fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
}

// Fetch says what downloading rawURL from this factory (or the public one)
// gets: nil, or an *HTTPError. URLs it does not serve are not its business
// (nil). This is the lab Proxmox's download-url hook.
func (s *Server) Fetch(_ context.Context, rawURL string) error {
	if !s.Serves(rawURL) {
		return nil
	}

	u, err := url.Parse(rawURL)
	if err != nil {
		return nil //nolint:nilerr // Serves parsed it
	}

	parts := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	if len(parts) != 4 || parts[0] != "image" {
		return &HTTPError{Status: http.StatusNotFound, Message: "404 page not found"}
	}

	err = s.image(parts[1], parts[2], parts[3])
	if err != nil {
		s.logf("image factory: GET %s: %v", u.Path, err)
	}

	return err
}

// image checks a boot asset request in the factory's order: schematic,
// version, asset path, extensions available for the version.
func (s *Server) image(id, version, path string) error {
	sch, err := s.lookup(id)
	if err != nil {
		return &HTTPError{Status: http.StatusNotFound, Message: err.Error()}
	}

	v, err := parseVersion(version)
	if err != nil {
		return &HTTPError{Status: http.StatusInternalServerError, Message: "internal server error"}
	}

	if !assetPath.MatchString(path) {
		return &HTTPError{Status: http.StatusBadRequest, Message: fmt.Sprintf("error parsing profile from path: unknown image path %q", path)}
	}

	for _, e := range sch.Customization.SystemExtensions.OfficialExtensions {
		if !s.official(e) {
			return &HTTPError{Status: http.StatusBadRequest, Message: fmt.Sprintf(
				"error enhancing profile from schematic: official extension %q is not available for Talos version v%s", e, v)}
		}
	}

	return nil
}

// assetPath are the image paths docs/api.md lists.
var assetPath = regexp.MustCompile(`^(?:kernel-(?:amd64|arm64)` +
	`|initramfs-(?:amd64|arm64)\.xz` +
	`|cmdline-[a-z0-9-]+-(?:amd64|arm64)(?:-secureboot)?` +
	`|(?:[a-z0-9]+-)?installer-(?:amd64|arm64)(?:-secureboot)?\.tar` +
	`|[a-z0-9]+-(?:amd64|arm64)(?:-secureboot)?(?:\.iso|-uki\.efi|\.raw\.xz|\.raw\.zst|\.raw|\.qcow2|\.vhd|\.vmdk|\.ova|\.raw\.tar\.gz|\.tar\.gz))$`)

// parseVersion reads a Talos version with or without the leading "v".
func parseVersion(s string) (semver.Version, error) {
	return semver.Parse(strings.TrimPrefix(s, "v"))
}

// installerRef is an installer image of the factory's registry frontend:
// <host>/[<platform>-]installer[-secureboot]/<schematic>:<version>.
var installerRef = regexp.MustCompile(`^([^/]+)/(?:[a-z0-9]+-)?installer(?:-secureboot)?/([0-9a-f]{64}):(v?[0-9][^/@]*)(?:@.*)?$`)

// PullInstaller says what pulling an installer image from this factory's
// registry (or the public one's) gets: nil, or containerd's error for a
// schematic the factory does not have ("not found") or cannot build. Other
// registries are not its business (nil). This is the simulator's pull hook.
func (s *Server) PullInstaller(ref string) error {
	m := installerRef.FindStringSubmatch(ref)
	if m == nil || !s.Serves("https://"+m[1]+"/") {
		return nil
	}

	if err := s.image(m[2], m[3], "installer-amd64.tar"); err != nil {
		var he *HTTPError
		if errors.As(err, &he) && he.Status == http.StatusNotFound {
			return fmt.Errorf("failed to resolve reference %q: %s: not found", ref, ref)
		}

		return fmt.Errorf("failed to resolve reference %q: unexpected status from HEAD request: %w", ref, err)
	}

	return nil
}
