package pve

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	proxmox "github.com/luthermonson/go-proxmox"
)

// APIError is an answer from the Proxmox VE API that is not a success.
// Proxmox puts its error message in the HTTP reason phrase (for example
// "500 Configuration file 'nodes/pve1/qemu-server/104.conf' does not exist"),
// which is what Message holds.
type APIError struct {
	Method string
	Path   string
	// Status is the HTTP status code (401 for a refused token).
	Status int
	// Message is Proxmox's own text, without the status code.
	Message string
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, e.Message)
	switch e.Status {
	case 401:
		msg += " (the API token was refused: check `apiToken`, PROXMOX_VE_API_TOKEN, as USER@REALM!TOKENID=SECRET)"
	case 403:
		// pve-access-control: a privilege-separated token (privsep=1) holds
		// what both its own ACLs and its user's give
		msg += " (the API token lacks a privilege on that path: grant it with `pveum acl modify <path> " +
			"--tokens USER@REALM!TOKENID --roles <role>`; a privilege-separated token needs it in its own ACLs " +
			"and its user in theirs; the README's \"Proxmox privileges\" section lists what the provider needs)"
	}
	return msg
}

// Kind classifies an error by what the caller should do about it.
type Kind int

const (
	// KindOther is any error not classified below.
	KindOther Kind = iota
	// KindNotFound: the VM, volume or node does not exist.
	KindNotFound
	// KindAlreadyExists: the VMID (or file) is already taken.
	KindAlreadyExists
	// KindLocked: the VM config is locked by another operation; retry later.
	KindLocked
	// KindTransient: a proxy or gateway error between cluster nodes; retry.
	KindTransient
	// KindAuth: the API token was refused or lacks a privilege.
	KindAuth
	// KindBadRequest: Proxmox refused the parameters (HTTP 400).
	KindBadRequest
	// KindUnreachable: no HTTP answer at all (DNS, refused, reset, timeout).
	KindUnreachable
	// KindTLS: the server's certificate could not be verified.
	KindTLS
)

func (k Kind) String() string {
	return [...]string{"other", "not found", "already exists", "locked", "transient",
		"auth", "bad request", "unreachable", "tls"}[k]
}

// Classify returns the Kind of err by the texts Proxmox VE answers with. Text
// matching is what works: go-proxmox turns every HTTP 500 into a plain error
// with the reason phrase, and Proxmox uses 500 for "does not exist", "already
// exists" and lock timeouts alike (qemu-server PVE/API2/Qemu.pm,
// pve-cluster PVE/Cluster.pm check_vmid_unused, pve-guest-common
// PVE/AbstractConfig.pm lock_config). bpg/terraform-provider-proxmox and
// siderolabs/omni-infra-provider-proxmox match the same texts.
func Classify(err error) Kind {
	if err == nil {
		return KindOther
	}
	var se *StaleLockError
	if errors.As(err, &se) {
		return KindOther // waiting will not release it
	}
	var ns *NodeSilentError
	if errors.As(err, &ns) {
		return KindOther // waiting longer is what it bounds
	}
	var te *TaskError
	if errors.As(err, &te) {
		return classifyText(te.ExitStatus)
	}
	var ae *APIError
	if errors.As(err, &ae) {
		switch ae.Status {
		case 401, 403:
			return KindAuth
		case 400:
			if k := classifyText(ae.Message); k == KindAlreadyExists {
				return k
			}
			return KindBadRequest
		case 502, 503, 504, 595, 596:
			// 595/596: pveproxy could not reach the node that owns the
			// resource (no route, connection refused): the request did not run.
			return KindTransient
		}
		return classifyText(ae.Message)
	}
	if errors.Is(err, proxmox.ErrNotAuthorized) {
		return KindAuth
	}
	if isTLSError(err) {
		return KindTLS
	}
	var ne net.Error
	var ue *url.Error
	var oe *net.OpError
	if errors.As(err, &oe) || errors.As(err, &ne) || errors.As(err, &ue) {
		return KindUnreachable
	}
	return classifyText(err.Error())
}

func classifyText(msg string) Kind {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "does not exist") || strings.Contains(m, "no such vm") ||
		strings.Contains(m, "no such volume"):
		return KindNotFound
	case strings.Contains(m, "already exists") || strings.Contains(m, "file exists"):
		return KindAlreadyExists
	case strings.Contains(m, "vm is locked") || strings.Contains(m, "can't lock file") ||
		strings.Contains(m, "got lock request timeout"):
		// "can't lock file '/var/lock/qemu-server/lock-<vmid>.conf' - got
		// timeout" (pve-common PVE/Tools.pm lock_file_full) and "cfs-lock
		// '<id>' error: got lock request timeout" (pve-cluster PVE/Cluster.pm
		// cfs_lock) fail before the locked code runs. A bare "got timeout"
		// is not a lock: "VM quit/powerdown failed - got timeout" is a guest
		// that ignored a shutdown or reboot (qemu-server QemuServer.pm
		// _do_vm_stop), and retrying waits the whole timeout again.
		return KindLocked
	case transientFailure(m):
		return KindTransient
	}
	return KindOther
}

// transientFailure reports (lower-cased) failure texts of Proxmox tasks
// and calls whose cause passes: a command that ran out of time
// ("command '/sbin/lvcreate ...' failed: got timeout", pve-common
// PVE/Cmd.pm run_command), systemd not answering in time while a VM's
// scope is set up ("timeout waiting on systemd", pve-common
// PVE/Systemd.pm), and a download whose network failed (wget exits with 4:
// "Network failure"). A guest that ignored a shutdown ("VM quit/powerdown
// failed - got timeout") is not among them: asking again waits as long.
func transientFailure(m string) bool {
	switch {
	case strings.Contains(m, "quit/powerdown failed"):
		return false
	case strings.Contains(m, "failed: got timeout") || strings.Contains(m, "timeout waiting on systemd"):
		return true
	case strings.Contains(m, "download failed") && strings.HasSuffix(strings.TrimSpace(m), "exit code 4"):
		return true
	}
	return false
}

func isTLSError(err error) bool {
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	var cv *tls.CertificateVerificationError
	var rh tls.RecordHeaderError
	return errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) ||
		errors.As(err, &cv) || errors.As(err, &rh)
}

// IsNotFound reports whether err says the object does not exist.
func IsNotFound(err error) bool { return Classify(err) == KindNotFound }

// IsConfigMissing reports whether err says the VM's configuration file is
// not on that node: "Configuration file 'nodes/<node>/qemu-server/<vmid>.conf'
// does not exist" (pve-guest-common PVE/AbstractConfig.pm load_config). The
// VM is gone from that node, though it may be on another (migrated). Other
// "does not exist" answers (a storage, a volume) do not mean the VM is gone.
func IsConfigMissing(err error) bool {
	if !IsNotFound(err) {
		return false
	}
	m := err.Error()
	return strings.Contains(m, "Configuration file") && strings.Contains(m, "does not exist")
}

// IsAlreadyExists reports whether err says the VMID or file is taken.
func IsAlreadyExists(err error) bool { return Classify(err) == KindAlreadyExists }

// apiErrorFrom turns what go-proxmox returns into an *APIError where the
// answer came from the server, keeping network and TLS errors as they are.
func apiErrorFrom(method, path string, err error) error {
	if err == nil {
		return nil
	}
	var ae *APIError
	if errors.As(err, &ae) { // from our transport: status outside what go-proxmox handles
		return &APIError{Method: method, Path: path, Status: ae.Status, Message: ae.Message}
	}
	if errors.Is(err, proxmox.ErrNotAuthorized) {
		return &APIError{Method: method, Path: path, Status: 401,
			Message: "authentication failure or permission denied"}
	}
	msg := err.Error()
	// go-proxmox: "bad request: 400 Parameter verification failed. - {...}"
	if rest, ok := strings.CutPrefix(msg, "bad request: "); ok {
		if code, text, ok := splitStatus(rest); ok {
			return &APIError{Method: method, Path: path, Status: code, Message: text}
		}
	}
	// go-proxmox: errors.New(res.Status) for 500 and 501.
	if code, text, ok := splitStatus(msg); ok && code >= 500 && code <= 599 {
		return &APIError{Method: method, Path: path, Status: code, Message: text}
	}
	return fmt.Errorf("%s %s: %w", method, path, err)
}

// splitStatus splits "500 some text" into 500 and "some text".
func splitStatus(s string) (int, string, bool) {
	head, rest, _ := strings.Cut(s, " ")
	if len(head) != 3 {
		return 0, "", false
	}
	code, err := strconv.Atoi(head)
	if err != nil || code < 100 {
		return 0, "", false
	}
	return code, strings.TrimSpace(rest), true
}
