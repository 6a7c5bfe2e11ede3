package pve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/proxmoxtalos/proxmoxtalos/tests/lab/pveapi"
)

// apiError is an error answer. PVE puts the first line of the message in
// the HTTP status line (pve-http-server src/PVE/APIServer/AnyEvent.pm, sub
// response), which is what go-proxmox turns into its error text
// ("500 Configuration file ... does not exist"), and, since
// libpve-http-server-perl 5.2, the whole message in the JSON body's
// "message" (Formatter/Standard.pm prepare_response_data).
type apiError struct {
	code   int
	msg    string // as PVE dies with it, usually ending in "\n"
	errors pveapi.Errors
	noBody bool // auth failures answer with an empty body
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%d %s", e.code, strings.TrimRight(e.msg, "\n"))
}

// fail is a 500 with PVE's message (a die in a handler).
func fail(format string, args ...any) *apiError {
	return &apiError{code: http.StatusInternalServerError, msg: fmt.Sprintf(format, args...)}
}

// paramError is raise_param_exc: a 400 with per-parameter messages.
func paramError(errs pveapi.Errors) *apiError {
	return &apiError{code: http.StatusBadRequest, msg: pveapi.VerificationFailed + "\n", errors: errs}
}

func param1(name, msg string) *apiError { return paramError(pveapi.Errors{name: msg}) }

// writeData answers 200 with {"data": ...}.
func writeData(w http.ResponseWriter, data any) {
	body, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		writeError(w, fail("lab: cannot encode the answer: %v\n", err))
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.Header().Set("Cache-Control", "max-age=0")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// writeError answers with PVE's status line, which carries the message as
// the reason phrase. net/http cannot set a reason phrase, so the connection
// is hijacked and the response written by hand; PVE closes connections after
// errors too (keep_alive = 0 for codes >= 400).
func writeError(w http.ResponseWriter, e *apiError) {
	reason := strings.SplitN(e.msg, "\n", 2)[0]
	if strings.ContainsAny(reason, "\r") || reason == "" {
		reason = http.StatusText(e.code)
	}
	var body []byte
	if !e.noBody {
		resp := map[string]any{"data": nil, "message": e.msg}
		if len(e.errors) > 0 {
			resp["errors"] = e.errors
		}
		body, _ = json.Marshal(resp)
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		w.WriteHeader(e.code)
		_, _ = w.Write(body)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	writeRaw(buf.Writer, e.code, reason, body)
}

func writeRaw(bw *bufio.Writer, code int, reason string, body []byte) {
	fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\n", code, reason)
	if body != nil {
		fmt.Fprintf(bw, "Content-Type: application/json;charset=UTF-8\r\n")
	}
	fmt.Fprintf(bw, "Content-Length: %d\r\nConnection: close\r\nCache-Control: max-age=0\r\n\r\n", len(body))
	_, _ = bw.Write(body)
	_ = bw.Flush()
}
