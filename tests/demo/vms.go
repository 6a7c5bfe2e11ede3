package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// pveAPI reads the lab's Proxmox VE API the way a user's tools would: TLS verified with the
// lab's CA, the API token in the Authorization header.
type pveAPI struct {
	base, token string
	client      *http.Client
}

func newPVEAPI(lab labInfo) (*pveAPI, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(lab.CACert)) {
		return nil, fmt.Errorf("the lab's caCert holds no PEM certificate")
	}
	return &pveAPI{base: lab.APIURL, token: lab.APIToken, client: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}}, nil
}

// get decodes the "data" of GET path into out.
func (a *pveAPI) get(path string, out any) error {
	req, err := http.NewRequest(http.MethodGet, a.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "PVEAPIToken="+a.token)
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s from the lab: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s from the lab: %s %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.NewDecoder(resp.Body).Decode(&struct{ Data any }{out}); err != nil {
		return fmt.Errorf("reading GET %s: %w", path, err)
	}
	return nil
}

type vm struct {
	VMID   int    `json:"vmid"`
	Name   string `json:"name"`
	Node   string `json:"node"`
	Status string `json:"status"`
	MaxMem int64  `json:"maxmem"`
	MaxCPU int    `json:"maxcpu"`
}

// showVMs prints the lab's VMs as Proxmox VE lists them (GET /cluster/resources?type=vm,
// the call behind the web UI's tree). wantAny says whether VMs are expected: the demo fails
// if the lab disagrees.
func showVMs(api *pveAPI, wantAny bool) error {
	var vms []vm
	if err := api.get("/cluster/resources?type=vm", &vms); err != nil {
		return err
	}
	sort.Slice(vms, func(i, j int) bool { return vms[i].VMID < vms[j].VMID })
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "VMID\tNAME\tNODE\tSTATUS\tCPUS\tMEMORY")
	for _, v := range vms {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%d MiB\n", v.VMID, v.Name, v.Node, v.Status, v.MaxCPU, v.MaxMem>>20)
	}
	w.Flush()
	fmt.Printf("%d VM(s)\n", len(vms))
	switch {
	case wantAny && len(vms) == 0:
		return fmt.Errorf("pulumi up succeeded but the lab holds no VM")
	case !wantAny && len(vms) > 0:
		return fmt.Errorf("pulumi destroy left %d VM(s) in the lab", len(vms))
	}
	return nil
}

// volume is one entry of a storage's content (ISO, disk image, cloud-init drive).
type volume struct {
	node, storage string
	VolID         string `json:"volid"`
	Content       string `json:"content"`
	Size          int64  `json:"size"`
	VMID          int    `json:"vmid"`
}

// showStorage prints the content of every storage of every node (GET /nodes, then
// /nodes/{node}/storage and /nodes/{node}/storage/{storage}/content, as `pvesm list` does).
// With wantEmpty a single volume left fails the demo: destroy must remove the ISOs it
// downloaded and the disks of the VMs it deleted, not only the VMs.
func showStorage(api *pveAPI, wantEmpty bool) error {
	var nodes []struct {
		Node string `json:"node"`
	}
	if err := api.get("/nodes", &nodes); err != nil {
		return err
	}
	var all []volume
	for _, n := range nodes {
		var storages []struct {
			Storage string `json:"storage"`
		}
		if err := api.get("/nodes/"+url.PathEscape(n.Node)+"/storage", &storages); err != nil {
			return err
		}
		for _, st := range storages {
			var vols []volume
			path := "/nodes/" + url.PathEscape(n.Node) + "/storage/" + url.PathEscape(st.Storage) + "/content"
			if err := api.get(path, &vols); err != nil {
				return err
			}
			for _, v := range vols {
				v.node, v.storage = n.Node, st.Storage
				all = append(all, v)
			}
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].node != all[j].node {
			return all[i].node < all[j].node
		}
		return all[i].VolID < all[j].VolID
	})
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tVOLUME\tCONTENT\tSIZE\tVMID")
	for _, v := range all {
		owner := "-"
		if v.VMID != 0 {
			owner = fmt.Sprint(v.VMID)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d MiB\t%s\n", v.node, v.VolID, v.Content, v.Size>>20, owner)
	}
	w.Flush()
	fmt.Printf("%d volume(s) on %d node(s)\n", len(all), len(nodes))
	if wantEmpty && len(all) > 0 {
		left := make([]string, len(all))
		for i, v := range all {
			left[i] = v.node + "/" + v.VolID
		}
		return fmt.Errorf("pulumi destroy left %d volume(s) in the lab's storage: %s", len(all), strings.Join(left, ", "))
	}
	return nil
}
