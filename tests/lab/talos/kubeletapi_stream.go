package talos

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The kubelet API's streaming endpoints (`kubectl exec`, `attach`,
// `port-forward`), answered as a real kubelet answers them for containers
// its runtime does not run: the lab's containers have no process to exec
// into, attach to or forward a port to. The steps and texts are the
// kubelet's (k8s.io/kubernetes v1.35 pkg/kubelet/server/server.go getExec,
// getAttach, getPortForward; pkg/kubelet/kubelet_pods.go GetExec,
// GetAttach, GetPortForward; k8s.io/kubelet pkg/cri/streaming: the options
// parsing and WriteError, which answers a runtime's plain error with 500):
//
//   - the options first: exec and attach without stdin, stdout or stderr
//     are a 400; a WebSocket port-forward without a port too;
//   - a pod this kubelet does not have: 404 "pod does not exist";
//   - then the runtime's running containers (exec, attach) or pods
//     (port-forward), where the lab's are not: 500 `container not found
//     ("<name>")`, `container <name> not found in pod <pod>_<namespace>`,
//     `pod not found ("<pod>_<namespace>")`.

// streamingRoute: the handler of a kubelet path, with its namespace, pod,
// optional uid and container (exec, attach: /<kind>/<ns>/<pod>[/<uid>]/<container>;
// portForward: /portForward/<ns>/<pod>[/<uid>]).
type streamingRoute struct {
	kind, ns, pod, uid, container string
}

func parseStreamingRoute(parts []string) (streamingRoute, bool) {
	if len(parts) == 0 {
		return streamingRoute{}, false
	}

	r := streamingRoute{kind: parts[0]}
	args := parts[1:]

	switch {
	case (r.kind == "exec" || r.kind == "attach") && (len(args) == 3 || len(args) == 4):
		r.ns, r.pod, r.container = args[0], args[1], args[len(args)-1]
		if len(args) == 4 {
			r.uid = args[2]
		}
	case r.kind == "portForward" && (len(args) == 2 || len(args) == 3):
		r.ns, r.pod = args[0], args[1]
		if len(args) == 3 {
			r.uid = args[2]
		}
	default:
		return streamingRoute{}, false
	}

	return r, true
}

// serveStreaming answers a streaming request (GET or POST, as the kubelet
// registers them).
func (k *kubeletAPI) serveStreaming(w http.ResponseWriter, r *http.Request, route streamingRoute) {
	if err := streamingOptions(r, route.kind); err != nil {
		kubeletError(w, http.StatusBadRequest, err.Error())

		return
	}

	uid, ok := k.podUID(route.ns, route.pod)
	if !ok {
		kubeletError(w, http.StatusNotFound, "pod does not exist")

		return
	}

	fullName := route.pod + "_" + route.ns // kubecontainer.GetPodFullName

	switch route.kind {
	case "exec":
		kubeletError(w, http.StatusInternalServerError, fmt.Sprintf("container not found (%q)", route.container))
	case "attach":
		kubeletError(w, http.StatusInternalServerError, fmt.Sprintf("container %s not found in pod %s", route.container, fullName))
	default:
		if route.uid != "" && route.uid != uid {
			kubeletError(w, http.StatusNotFound, "pod not found")

			return
		}

		kubeletError(w, http.StatusInternalServerError, fmt.Sprintf("pod not found (%q)", fullName))
	}
}

// streamingOptions: remotecommandserver.NewOptions for exec and attach,
// portforward.NewV4Options for a WebSocket port-forward (SPDY names its
// ports in streams, later).
func streamingOptions(r *http.Request, kind string) error {
	if kind != "portForward" {
		// k8s.io/api core/v1 ExecStdinParam, ExecStdoutParam, ExecStderrParam.
		set := func(p string) bool { return r.FormValue(p) == "1" }
		if !set("input") && !set("output") && !set("error") {
			return fmt.Errorf("you must specify at least 1 of stdin, stdout, stderr")
		}

		return nil
	}

	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return nil
	}

	ports := r.URL.Query()["port"]
	if len(ports) == 0 {
		return fmt.Errorf("query parameter %q is required", "port")
	}

	for _, s := range ports {
		if s == "" {
			return fmt.Errorf("query parameter %q cannot be empty", "port")
		}

		for p := range strings.SplitSeq(s, ",") {
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil {
				return fmt.Errorf("unable to parse %q as a port: %w", s, err)
			}

			if n < 1 {
				return fmt.Errorf("port %q must be > 0", s)
			}
		}
	}

	return nil
}

// kubeletError writes a text answer as go-restful's WriteError and the
// streaming package's WriteError do: the status and the error's text.
func kubeletError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	w.Write([]byte(msg)) //nolint:errcheck
}

// podsOfNode answers which pods the node's kubelet has (its pod manager's
// pods: those bound to the node, static ones included through their
// mirror pods), with their uid, read through the node's own identity.
func (a *kubeAgent) podsOfNode(v kubeletView, pki *kubePKI) func(ns, pod string) (string, bool) {
	node := v.name
	c := pki.client(a.apiAddr, "system:node:"+node, "system:nodes")

	return func(ns, pod string) (string, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()

		var p obj
		if err := c.do(ctx, http.MethodGet, "/api/v1/namespaces/"+url.PathEscape(ns)+"/pods/"+url.PathEscape(pod), "", nil, &p); err != nil {
			return "", false
		}

		if fieldString(p, "spec", "nodeName") != node {
			return "", false
		}

		return fieldString(p, "metadata", "uid"), true
	}
}
