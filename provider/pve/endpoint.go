package pve

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// apiPath is the path prefix of the Proxmox VE JSON API.
const apiPath = "/api2/json"

// NormalizeEndpoint turns the forms users write for a Proxmox VE endpoint
// ("https://pve:8006", "https://pve:8006/", "https://pve:8006/api2/json/",
// "pve.example.com:8006") into one canonical base URL ending in /api2/json, so
// that equivalent forms compare equal and never cause a diff.
func NormalizeEndpoint(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", fmt.Errorf("the Proxmox VE endpoint is empty: set `endpoint` " +
			"(or PROXMOX_VE_ENDPOINT) to the API address, for example https://pve.example.com:8006")
	}
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("the Proxmox VE endpoint %q is not a URL: %w", raw, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return "", fmt.Errorf("the Proxmox VE endpoint %q must use https (the API is served over TLS), not %q", raw, u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", fmt.Errorf("the Proxmox VE endpoint %q has no host name", raw)
	}
	if scheme == "http" && !isLoopbackHost(u.Hostname()) {
		return "", fmt.Errorf("the Proxmox VE endpoint %q uses plain http to %s: the API token would cross the "+
			"network unencrypted. Use https:// (pveproxy serves https on port 8006); plain http is accepted only "+
			"for a loopback host such as 127.0.0.1 or localhost (an SSH tunnel or local proxy)", raw, u.Hostname())
	}
	if u.User != nil {
		return "", fmt.Errorf("the Proxmox VE endpoint must not contain credentials; use `apiToken`")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("the Proxmox VE endpoint %q must not contain a query or fragment", raw)
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6 literal without port
	}
	path := strings.TrimRight(u.Path, "/")
	path = strings.TrimSuffix(path, apiPath)
	path = strings.TrimRight(path, "/")
	return scheme + "://" + host + path + apiPath, nil
}

// APIToken is a parsed Proxmox VE API token, USER@REALM!TOKENID=SECRET.
type APIToken struct {
	// ID is USER@REALM!TOKENID: not secret, safe to show in messages.
	ID string
	// Secret is the token's UUID secret: never log or print it.
	Secret string
}

// ParseAPIToken parses USER@REALM!TOKENID=SECRET. Its errors never contain the
// secret part.
func ParseAPIToken(raw string) (APIToken, error) {
	const form = "the API token must have the form USER@REALM!TOKENID=SECRET " +
		"(for example root@pam!pulumi=xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)"
	s := strings.TrimSpace(raw)
	if s == "" {
		return APIToken{}, fmt.Errorf("the Proxmox VE API token is empty: set `apiToken` (or PROXMOX_VE_API_TOKEN); %s", form)
	}
	s = strings.TrimPrefix(s, "PVEAPIToken=")
	id, secret, ok := strings.Cut(s, "=")
	if !ok || secret == "" {
		return APIToken{}, fmt.Errorf("%s: the secret after '=' is missing", form)
	}
	user, tokenName, ok := strings.Cut(id, "!")
	if !ok || tokenName == "" {
		return APIToken{}, fmt.Errorf("%s: the token name after '!' is missing in %q", form, id)
	}
	if name, realm, ok := strings.Cut(user, "@"); !ok || name == "" || realm == "" {
		return APIToken{}, fmt.Errorf("%s: the user %q has no @REALM", form, user)
	}
	if strings.ContainsAny(secret, " \t\r\n") {
		return APIToken{}, fmt.Errorf("%s: the secret of %q contains white space", form, id)
	}
	return APIToken{ID: id, Secret: secret}, nil
}

// isLoopbackHost reports whether host names this machine only.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
