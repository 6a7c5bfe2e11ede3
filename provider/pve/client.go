package pve

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
)

// Options describe how to reach a Proxmox VE API.
type Options struct {
	// Endpoint in any form NormalizeEndpoint accepts.
	Endpoint string
	// APIToken is USER@REALM!TOKENID=SECRET.
	APIToken string
	// Insecure skips TLS verification (test hosts with self-signed certificates).
	Insecure bool
	// CACertPEM is added to the system roots to verify the host's certificate.
	CACertPEM string
	// RequestTimeout bounds each HTTP request; 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// UserAgent is sent with every request.
	UserAgent string
	// NodeWait bounds a planning read's wait for one node (see Planning);
	// 0 means NodeWait.
	NodeWait time.Duration
}

// DefaultRequestTimeout bounds one HTTP request to the API.
const DefaultRequestTimeout = 60 * time.Second

// connectRetryFor bounds the retries of the connection check: long enough
// for a restarting pveproxy, short enough that a wrong endpoint fails soon.
const connectRetryFor = 15 * time.Second

var connectRetry = RetryPolicy{Initial: 500 * time.Millisecond, Max: 4 * time.Second}

// Client is a connected Proxmox VE API client. It is safe for concurrent use;
// one Client serves a whole provider process so that VMID allocation is
// serialized across all resources.
type Client struct {
	api      *proxmox.Client
	endpoint string
	tokenID  string
	version  string
	ids      *IDAllocator
	memory   *MemoryClaims
	inv      inventoryCache
	disc     discovery
	// own holds the UPIDs of the tasks this process started and awaits
	own sync.Map
	// made holds the VMIDs whose create or clone call this process sent
	// and Proxmox accepted, with the time it answered (see Unsettled,
	// forgetGone)
	made sync.Map
	// started holds when this process last started or rebooted each VMID
	// (StartedAt)
	started sync.Map
	// taskPoll is the first interval between task status polls.
	taskPoll time.Duration
	privs    privilegeCache
	vols     volumeLists
	// answers: the nodes that did not answer a planning read (NodeWait)
	answers  nodeAnswers
	nodeWait time.Duration
}

// Connect builds a client and proves the connection with one authenticated
// request, so that a wrong endpoint, an unverifiable certificate or a refused
// token fails here with a message that says which.
func Connect(ctx context.Context, opts Options) (*Client, error) {
	endpoint, err := NormalizeEndpoint(opts.Endpoint)
	if err != nil {
		return nil, err
	}
	tok, err := ParseAPIToken(opts.APIToken)
	if err != nil {
		return nil, err
	}
	timeout := opts.RequestTimeout
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	hc, err := newHTTPClient(opts.Insecure, opts.CACertPEM, timeout)
	if err != nil {
		return nil, err
	}
	ua := opts.UserAgent
	if ua == "" {
		ua = "proxmoxtalos"
	}
	c := &Client{
		api: proxmox.NewClient(endpoint,
			proxmox.WithHTTPClient(hc),
			proxmox.WithAPIToken(tok.ID, tok.Secret),
			proxmox.WithUserAgent(ua)),
		endpoint: endpoint,
		tokenID:  tok.ID,
		taskPoll: 100 * time.Millisecond,
		nodeWait: opts.NodeWait,
	}
	if c.nodeWait <= 0 {
		c.nodeWait = NodeWait
	}
	c.ids = NewIDAllocator(clusterIDs{c})
	c.memory = NewMemoryClaims()

	var v *proxmox.Version
	// a passing failure (a 500 while pveproxy restarts, a proxy's 502, a
	// dropped connection) must not fail every resource of the run: retried
	// for a short while; a refused token or certificate never is
	rctx, cancel := context.WithTimeout(ctx, connectRetryFor)
	defer cancel()
	err = connectRetry.Retry(rctx, "checking the connection", true, func(context.Context) error {
		var err error
		v, err = c.api.Version(ctx)
		return apiErrorFrom(http.MethodGet, "/version", err)
	})
	if err != nil {
		return nil, c.connectError(err)
	}
	c.version = v.Version
	return c, nil
}

func (c *Client) connectError(err error) error {
	switch Classify(err) {
	case KindUnreachable:
		return fmt.Errorf("cannot reach the Proxmox VE API at %s: %w; check `endpoint` "+
			"(PROXMOX_VE_ENDPOINT) and that the host answers on that port from this machine", c.endpoint, err)
	case KindTLS:
		return fmt.Errorf("cannot verify the TLS certificate of the Proxmox VE API at %s: %w; "+
			"give the PEM of the CA that signed it in `caCert` (PROXMOX_VE_CA_CERT), "+
			"or set `insecure: true` (PROXMOX_VE_INSECURE) for a test host only", c.endpoint, err)
	case KindAuth:
		return fmt.Errorf("the Proxmox VE API at %s refused the API token %q: check `apiToken` "+
			"(PROXMOX_VE_API_TOKEN): the user, realm and token name, the secret, and that the "+
			"token is neither expired nor deleted", c.endpoint, c.tokenID)
	}
	return fmt.Errorf("connecting to the Proxmox VE API at %s: %w", c.endpoint, err)
}

// Endpoint is the normalized API base URL (ending in /api2/json).
func (c *Client) Endpoint() string { return c.endpoint }

// Version is the Proxmox VE version the server reported at connect time.
func (c *Client) Version() string { return c.version }

func (c *Client) get(ctx context.Context, path string, out any) error {
	if node := nodeOfPath(path); node != "" {
		return c.getFromNode(ctx, node, path, out)
	}
	return c.getOnce(ctx, path, out)
}

func (c *Client) getOnce(ctx context.Context, path string, out any) error {
	return apiErrorFrom(http.MethodGet, path, c.api.Get(ctx, path, out))
}

// writeDone voids the shared reads (inventory, storage content) once more
// when a write has been answered or its task has ended: a read that ran
// meanwhile may show the cluster before the change.
func (c *Client) writeDone() { c.inv.changes.Add(1) }

// storageWritten voids the kept content lists of the storage a write to
// path changes, if any, now and (through the function it returns) once the
// write is answered. The callers that wait for the write's task void them
// again when it ends (DownloadURL, DeleteVolume).
func (c *Client) storageWritten(path string) func() {
	node, storage := storageWrite(path)
	if storage == "" {
		return func() {}
	}
	c.vols.changed(node, storage)
	return func() { c.vols.changed(node, storage) }
}

func (c *Client) post(ctx context.Context, path string, params map[string]any, out any) error {
	c.inv.changes.Add(1)
	defer c.writeDone()
	defer c.storageWritten(path)()
	return apiErrorFrom(http.MethodPost, path, c.api.Post(ctx, path, body(params), out))
}

func (c *Client) put(ctx context.Context, path string, params map[string]any, out any) error {
	c.inv.changes.Add(1)
	defer c.writeDone()
	defer c.storageWritten(path)()
	return apiErrorFrom(http.MethodPut, path, c.api.Put(ctx, path, body(params), out))
}

// body is what go-proxmox marshals as the request body: nil (no body at all)
// when there are no parameters. A typed nil map would be marshalled as the
// JSON text "null": PVE 7 and later decode that to no parameters (JSON::XS 4
// allows non-reference texts), but PVE before 6.2 parsed any body as a form
// (pve-http-server commit 3e05f16 added application/json), 6.x's JSON::XS 3
// refuses "null", and strict proxies in front of PVE refuse a JSON body
// that is not an object.
func body(params map[string]any) any {
	if len(params) == 0 {
		return nil
	}
	return stringParams(params)
}

// stringParams sends every value as a string, as the Proxmox web UI and pvesh
// do with form encoding, so that booleans arrive as 1/0 rather than JSON true.
func stringParams(params map[string]any) map[string]string {
	out := make(map[string]string, len(params))
	for k, v := range params {
		out[k] = paramString(v)
	}
	return out
}

func (c *Client) delete(ctx context.Context, path string, params map[string]any, out any) error {
	c.inv.changes.Add(1)
	defer c.writeDone()
	defer c.storageWritten(path)()
	if len(params) > 0 {
		path += "?" + encodeQuery(params)
	}
	return apiErrorFrom(http.MethodDelete, path, c.api.Delete(ctx, path, out))
}

// encodeQuery renders params as a query string with values as Proxmox
// expects them (booleans as 1/0).
func encodeQuery(params map[string]any) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(queryEscape(paramString(params[k])))
	}
	return b.String()
}

// paramString renders one parameter value the way Proxmox's own clients do.
func paramString(v any) string {
	switch x := v.(type) {
	case bool:
		if x {
			return "1"
		}
		return "0"
	case string:
		return x
	case json.Number:
		return x.String()
	default:
		return fmt.Sprint(x)
	}
}
