package pve

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	api := func(status int, msg string) error {
		return &APIError{Method: "POST", Path: "/x", Status: status, Message: msg}
	}
	cases := []struct {
		err  error
		want Kind
	}{
		{api(500, "Configuration file 'nodes/pve1/qemu-server/104.conf' does not exist"), KindNotFound},
		{api(500, "unable to create VM 104 - VM 104 already exists on node 'pve2'"), KindAlreadyExists},
		{api(500, "unable to create VM 105: config file already exists"), KindAlreadyExists},
		{api(400, `Parameter verification failed. - {"vmid":"VM 104 already exists"}`), KindAlreadyExists},
		{api(400, `Parameter verification failed. - {"cores":"invalid format"}`), KindBadRequest},
		{api(500, "VM is locked (clone)"), KindLocked},
		{api(500, "can't lock file '/var/lock/qemu-server/lock-104.conf' - got timeout"), KindLocked},
		{api(500, "unable to create VM 104 - cfs-lock 'storage-local-lvm' error: got lock request timeout"), KindLocked},
		{&TaskError{ExitStatus: "VM quit/powerdown failed - got timeout"}, KindOther},
		{&StaleLockError{Ref: VMRef{Node: "pve1", VMID: 104}, Lock: "create"}, KindOther},
		{fmt.Errorf("x: %w", &StaleLockError{Lock: "clone"}), KindOther},
		{api(596, "Connection timed out"), KindTransient},
		{&TaskError{ExitStatus: "VM quit/powerdown failed - got timeout"}, KindOther},
		{api(502, "Bad Gateway"), KindTransient},
		{api(401, "authentication failure"), KindAuth},
		{api(500, "storage 'nope' does not exist"), KindNotFound},
		{api(500, "start failed: QEMU exited with code 1"), KindOther},
		{&TaskError{ExitStatus: "can't lock file '/var/lock/qemu-server/lock-104.conf' - got timeout"}, KindLocked},
		{&TaskError{ExitStatus: "clone failed: unable to create VM 110: config file already exists"}, KindAlreadyExists},
		{fmt.Errorf("wrapped: %w", api(500, "VM is locked (backup)")), KindLocked},
		{proxmox.ErrNotAuthorized, KindAuth},
		{errors.New("something else"), KindOther},
	}
	for _, c := range cases {
		if got := Classify(c.err); got != c.want {
			t.Errorf("Classify(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestAPIErrorFromGoProxmox(t *testing.T) {
	t.Parallel()
	err := apiErrorFrom("GET", "/nodes/pve1/qemu/104/config", errors.New("500 Configuration file 'nodes/pve1/qemu-server/104.conf' does not exist"))
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 500 || ae.Message != "Configuration file 'nodes/pve1/qemu-server/104.conf' does not exist" {
		t.Fatalf("500: %#v", err)
	}
	err = apiErrorFrom("POST", "/nodes/pve1/qemu", errors.New(`bad request: 400 Parameter verification failed. - {"memory":"value must have a minimum value of 16"}`))
	if !errors.As(err, &ae) || ae.Status != 400 || Classify(err) != KindBadRequest {
		t.Fatalf("400: %#v", err)
	}
}

func TestRetryable(t *testing.T) {
	t.Parallel()
	locked := &APIError{Status: 500, Message: "VM is locked (clone)"}
	proxy := &APIError{Status: 596, Message: "Connection refused"}
	exists := &APIError{Status: 500, Message: "VM 104 already exists on node 'pve1'"}
	if !Retryable(locked, false) || !Retryable(proxy, true) || Retryable(proxy, false) || Retryable(exists, true) {
		t.Fatal("retry rules changed")
	}
	// 595: pveproxy could not connect to the node, the request never ran:
	// safe to send again even when it creates something.
	if !Retryable(&APIError{Status: 595, Message: "No route to host"}, false) {
		t.Error("a 595 is not retried for a non-idempotent call")
	}
	refused := &url.Error{Op: "Post", URL: "https://pve:8006", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}
	if !Retryable(refused, false) {
		t.Error("a refused connection is not retried for a non-idempotent call")
	}
	reset := &url.Error{Op: "Post", URL: "https://pve:8006", Err: &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}}
	if Retryable(reset, false) {
		t.Error("a connection lost after sending is retried for a non-idempotent call")
	}
	if Retryable(&TaskError{ExitStatus: "VM quit/powerdown failed - got timeout"}, false) {
		t.Error("a guest that ignored a shutdown is retried like a lock")
	}
}

func TestLockOf(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"POST /x: 500 VM is locked (create)":                                   "create",
		"Proxmox task qmdestroy 104 on node pve1 failed: VM is locked (clone)": "clone",
		"VM is locked (snapshot-delete)":                                       "snapshot-delete",
		"can't lock file '/var/lock/qemu-server/lock-104.conf' - got timeout":  "",
	}
	for msg, want := range cases {
		if got := lockOf(errors.New(msg)); got != want {
			t.Errorf("lockOf(%q) = %q, want %q", msg, got, want)
		}
	}
}

func TestIsConfigMissing(t *testing.T) {
	t.Parallel()
	api := func(msg string) error { return &APIError{Method: "GET", Path: "/x", Status: 500, Message: msg} }
	if !IsConfigMissing(api("Configuration file 'nodes/pve1/qemu-server/104.conf' does not exist")) {
		t.Error("a missing config file is the VM missing from that node")
	}
	for _, msg := range []string{"storage 'nope' does not exist", "volume 'local-lvm:vm-104-disk-0' does not exist"} {
		if IsConfigMissing(api(msg)) {
			t.Errorf("%q is not the VM missing", msg)
		}
	}
}
