package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"text/tabwriter"
	"time"
)

type vm struct {
	VMID   int    `json:"vmid"`
	Name   string `json:"name"`
	Node   string `json:"node"`
	Status string `json:"status"`
	MaxMem int64  `json:"maxmem"`
	MaxCPU int    `json:"maxcpu"`
}

// showVMs prints the lab's VMs as Proxmox VE lists them (GET /cluster/resources?type=vm,
// the call behind the web UI's tree), verifying TLS with the lab's CA like the provider.
// wantAny says whether VMs are expected: the demo fails if the lab disagrees.
func showVMs(lab labInfo, wantAny bool) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(lab.CACert)) {
		return fmt.Errorf("the lab's caCert holds no PEM certificate")
	}
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}
	req, err := http.NewRequest(http.MethodGet, lab.APIURL+"/cluster/resources?type=vm", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "PVEAPIToken="+lab.APIToken)
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("asking the lab for its VMs: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /cluster/resources?type=vm: %s", resp.Status)
	}
	var body struct {
		Data []vm `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("reading /cluster/resources: %w", err)
	}
	sort.Slice(body.Data, func(i, j int) bool { return body.Data[i].VMID < body.Data[j].VMID })
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "VMID\tNAME\tNODE\tSTATUS\tCPUS\tMEMORY")
	for _, v := range body.Data {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%d MiB\n", v.VMID, v.Name, v.Node, v.Status, v.MaxCPU, v.MaxMem>>20)
	}
	w.Flush()
	fmt.Printf("%d VM(s)\n", len(body.Data))
	switch {
	case wantAny && len(body.Data) == 0:
		return fmt.Errorf("pulumi up succeeded but the lab holds no VM")
	case !wantAny && len(body.Data) > 0:
		return fmt.Errorf("pulumi destroy left %d VM(s) in the lab", len(body.Data))
	}
	return nil
}
