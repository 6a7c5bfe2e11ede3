package pve

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pveapi"
)

// request is one validated API call.
type request struct {
	ctx    context.Context
	method *pveapi.Method
	p      map[string]string // validated parameters, path parameters included
	raw    map[string]any    // the decoded parameters before validation
	user   string            // the token id, "root@pam!lab"
}

// result is a handler's answer: data plus the optional "total" attribute.
type result struct {
	data  any
	total int
}

type handlerFunc func(r *request) (any, error)

// ServeHTTP follows pve-http-server's order: authentication, handler lookup,
// parameter merge, node resolution (proxyto), then the handler, which
// validates its parameters first.
func (s *Server) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	if hr.URL.Path == "/lab/stats" {
		s.serveStats(w, hr)
		return
	}
	rel, ok := strings.CutPrefix(hr.URL.Path, "/api2/json")
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
		writeError(w, &apiError{code: http.StatusNotImplemented, msg: "no such uri", noBody: true})
		return
	}
	if rel == "" {
		rel = "/"
	}
	user, aerr := s.authenticate(hr)
	if aerr != nil {
		// pve-http-server delays refused logins by 3 seconds
		// (src/PVE/APIServer/AnyEvent.pm: "always delay unauthorized
		// calls by 3 seconds"), scaled by the lab's time scale.
		s.sleepReal(3 * time.Second)
		writeError(w, aerr)
		return
	}
	m, pathVars := s.schema.Find(hr.Method, rel)
	kind := hr.Method + " " + pathTemplate(m)
	var raw map[string]any
	var data any
	h := s.handlers[kind]
	if m == nil {
		kind = hr.Method + " (no such path)"
	}
	defer func() { s.counted(kind, pathVars, raw, data) }()
	if m == nil || h == nil {
		writeError(w, &apiError{code: http.StatusNotImplemented, msg: fmt.Sprintf("Method '%s %s' not implemented", hr.Method, rel)})
		return
	}
	var perr *apiError
	raw, perr = readParams(hr)
	if perr != nil {
		writeError(w, perr)
		return
	}
	if perr := mergePathVars(raw, pathVars); perr != nil {
		writeError(w, perr)
		return
	}
	s.mu.Lock()
	permErr := s.checkAPI2Locked(m, rel, user, raw)
	s.mu.Unlock()
	if permErr != nil {
		writeError(w, asAPIError(permErr))
		return
	}
	if nodeName, ok := pathVars["node"]; ok {
		s.stats.nodeRequest(nodeName)
		if e := s.checkNodeReachable(hr.Context(), nodeName); e != nil {
			writeError(w, e)
			return
		}
	}
	inject, scripted, lost := s.faultsFor(hr.Method, m.Path, pathVars["node"], rel)
	if scripted != nil && inject == "" && !lost {
		writeError(w, scripted)
		return
	}
	if inject != "" {
		writeError(w, fail("lab fault injection: internal server error (%s)\n", inject))
		return
	}
	params, errs := m.Validate(raw)
	if errs != nil {
		writeError(w, paramError(errs))
		return
	}
	var err error
	data, err = h(&request{ctx: hr.Context(), method: m, p: params, raw: raw, user: user})
	if scripted != nil && inject == "" {
		writeError(w, scripted) // the call ran; its answer is lost
		return
	}
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	if r, ok := data.(result); ok {
		writeTotal(w, r.data, r.total)
		return
	}
	writeData(w, data)
}

// mergePathVars adds the URI's parameters to the request's; the same one in
// both with another value is refused, as pve-http-server does.
func mergePathVars(raw map[string]any, pathVars map[string]string) *apiError {
	for k, v := range pathVars {
		if old, ok := raw[k]; ok {
			if s, _ := old.(string); s != v {
				if n, isNum := old.(json.Number); !isNum || string(n) != v {
					return param1(k, "duplicate parameter (already defined in URI) with conflicting values!")
				}
			}
		}
		raw[k] = v
	}
	return nil
}

// faultsFor is the injected fault for a call, if any: a random or one-shot
// server error (inject names which), or a scripted fault (lost: the call
// runs and only its answer is lost).
func (s *Server) faultsFor(method, path, node, rel string) (inject string, scripted *apiError, lost bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rollLocked(s.faults.ServerErrorRate) {
		inject = "ServerErrorRate"
	}
	if call := s.faults.ServerErrorOnCall; call != "" && call == method+" "+path {
		s.faults.ServerErrorOnCall = ""
		inject = "ServerErrorOnCall"
	}
	scripted, lost = s.scriptCallLocked(method, path, node, rel)
	return inject, scripted, lost
}

func pathTemplate(m *pveapi.Method) string {
	if m == nil {
		return ""
	}
	return m.Path
}

func writeTotal(w http.ResponseWriter, data any, total int) {
	body, _ := json.Marshal(map[string]any{"data": data, "total": total})
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	_, _ = w.Write(body)
}

// authenticate checks the API token of the request like
// PVE::AccessControl::verify_token: "PVEAPIToken=<id>=<secret>" in the
// Authorization header (PVE::APIServer::Formatter::extract_auth_value), a
// known token of an enabled, unexpired user. A missing token is "No
// ticket", any refused one "Authentication failed!" (pve-manager
// PVE/HTTPServer.pm auth_handler), both 401 without a body. It returns the
// token id, which is the request's user (the authid tasks carry).
func (s *Server) authenticate(hr *http.Request) (string, *apiError) {
	header := hr.Header.Get("Authorization")
	token := ""
	for _, part := range strings.Split(header, ";") {
		part = strings.TrimSpace(part)
		if v, ok := strings.CutPrefix(part, "PVEAPIToken="); ok {
			token = v
		} else if v, ok := strings.CutPrefix(part, "PVEAPIToken "); ok {
			token = v
		}
	}
	if token == "" {
		return "", &apiError{code: http.StatusUnauthorized, msg: "No ticket\n", noBody: true}
	}
	if tok, err := url.PathUnescape(token); err == nil {
		token = tok
	}
	refuse := func(why string) (string, *apiError) {
		// pveproxy logs "authentication failure; rhost=... user=... msg=..."
		s.logf("authentication failure: %s", why)
		return "", &apiError{code: http.StatusUnauthorized, msg: "Authentication failed!\n", noBody: true}
	}
	i := strings.LastIndex(token, "=")
	if i < 0 {
		return refuse("no tokenid specified")
	}
	id, secret := token[:i], token[i+1:]
	user, name, ok := splitTokenID(id)
	if !ok {
		return refuse(fmt.Sprintf("'%s' is not a valid token ID", id))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.access.users[user]
	now := time.Now().Unix()
	switch {
	case u == nil:
		return refuse(fmt.Sprintf("no such user ('%s')", user))
	case !u.enabled:
		return refuse(fmt.Sprintf("user '%s' is disabled", user))
	case u.expire != 0 && u.expire < now:
		return refuse(fmt.Sprintf("user '%s' access expired", user))
	case u.tokens[name] == nil:
		return refuse(fmt.Sprintf("no such token '%s' for user '%s'", name, user))
	case u.tokens[name].expire != 0 && u.tokens[name].expire < now:
		return refuse(fmt.Sprintf("token '%s' access expired", name))
	case subtle.ConstantTimeCompare([]byte(u.tokens[name].secret), []byte(secret)) != 1:
		return refuse(fmt.Sprintf("invalid token value for '%s'", id))
	}
	return id, nil
}

// asAPIError makes any handler error an answer: an *apiError as it is,
// anything else a 500 with its text (a die in a handler).
func asAPIError(err error) *apiError {
	if ae, ok := err.(*apiError); ok {
		return ae
	}
	return fail("%s", err.Error())
}

// readParams decodes the body (JSON or form, PUT and POST only) and the
// query string; query values win, as in AnyEvent.pm extract_params.
func readParams(hr *http.Request) (map[string]any, *apiError) {
	out := map[string]any{}
	body, err := io.ReadAll(io.LimitReader(hr.Body, 16<<20))
	if err != nil {
		return nil, fail("unable to read request body: %v\n", err)
	}
	if len(body) > 0 {
		if hr.Method != http.MethodPost && hr.Method != http.MethodPut {
			return nil, &apiError{code: http.StatusNotImplemented, msg: fmt.Sprintf("Unexpected content for method '%s'", hr.Method)}
		}
		ct, _, _ := mime.ParseMediaType(hr.Header.Get("Content-Type"))
		if ct == "application/json" {
			// decode_json of the JSON text "null" is undef with JSON::XS 4
			// (allow_nonref on by default, PVE 7 and later): no parameters,
			// which is what decoding "null" into a map gives here too.
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			var obj map[string]any
			if err := dec.Decode(&obj); err != nil {
				return nil, fail("malformed JSON string, %v\n", err)
			}
			for k, v := range obj {
				out[k] = v
			}
		} else {
			form, err := url.ParseQuery(string(body))
			if err != nil {
				return nil, &apiError{code: http.StatusBadRequest, msg: "invalid url encoding\n"}
			}
			addForm(out, form)
		}
	}
	addForm(out, hr.URL.Query())
	delete(out, "_dc") // the GUI's cache buster
	return out, nil
}

func addForm(out map[string]any, form url.Values) {
	for _, k := range slices.Sorted(maps.Keys(form)) {
		vs := form[k]
		if len(vs) == 1 {
			out[k] = vs[0]
			continue
		}
		arr := make([]any, len(vs))
		for i, v := range vs {
			arr[i] = v
		}
		out[k] = arr
	}
}

// checkNodeReachable mirrors the proxy step for /nodes/{node}/...: an
// unknown node fails the host name lookup, an offline node cannot be
// reached (pveproxy answers 595), and a hung node (HangNode) keeps the
// request until pveproxy's proxy gives up on it (596) or ctx, the client,
// does.
func (s *Server) checkNodeReachable(ctx context.Context, name string) *apiError {
	s.mu.Lock()
	n := s.node(name)
	if n == nil {
		s.mu.Unlock()
		return fail("hostname lookup '%s' failed - failed to get address info for: %s: Name or service not known\n", name, name)
	}
	online, hung, wait := n.online, n.hung, n.hangFor
	s.mu.Unlock()
	if !online {
		// pveproxy's proxy (AnyEvent::HTTP) reports the failed connection
		// as status 595 with the reason and no body.
		return &apiError{code: 595, msg: "No route to host\n", noBody: true}
	}
	if hung == nil {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	s.mu.Lock()
	n.waiting++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		n.waiting--
		s.mu.Unlock()
	}()
	select {
	case <-hung:
		return s.checkNodeReachable(ctx, name) // it answers again
	case <-t.C:
		// AnyEvent::HTTP's status for an error after the connection was
		// made (TLS, request, headers), with the timeout's errno text
		return &apiError{code: 596, msg: "Connection timed out\n", noBody: true}
	case <-ctx.Done():
		return &apiError{code: 596, msg: "client gave up\n", noBody: true} // nobody reads it
	case <-s.ctx.Done():
		return &apiError{code: 596, msg: "Connection timed out\n", noBody: true}
	}
}

// sleepReal waits d scaled by the time scale (no minimum).
func (s *Server) sleepReal(d time.Duration) {
	_ = s.sleep(s.ctx, d)
}
