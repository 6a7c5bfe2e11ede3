package pve

import (
	"fmt"
	"strings"
)

// registerHandlers maps every served method of the embedded schema to its
// handler; a handler without a schema entry, or a schema entry without a
// handler, is a programming error reported at start.
func (s *Server) registerHandlers() error {
	h := map[string]handlerFunc{
		"GET /version":                                s.hVersion,
		"GET /access/permissions":                     s.hPermissions,
		"GET /cluster/nextid":                         s.hNextID,
		"GET /cluster/resources":                      s.hResources,
		"GET /cluster/status":                         s.hClusterStatus,
		"GET /cluster/tasks":                          s.hClusterTasks,
		"GET /storage":                                s.hStorageList,
		"GET /storage/{storage}":                      s.hStorageGet,
		"GET /pools":                                  s.hPoolList,
		"POST /pools":                                 s.hPoolCreate,
		"PUT /pools":                                  s.hPoolUpdate,
		"DELETE /pools":                               s.hPoolDelete,
		"GET /pools/{poolid}":                         s.hPoolGet,
		"PUT /pools/{poolid}":                         s.hPoolUpdate,
		"DELETE /pools/{poolid}":                      s.hPoolDelete,
		"GET /nodes":                                  s.hNodes,
		"GET /nodes/{node}/status":                    s.hNodeStatus,
		"GET /nodes/{node}/version":                   s.hNodeVersion,
		"GET /nodes/{node}/network":                   s.hNetwork,
		"GET /nodes/{node}/network/{iface}":           s.hNetworkIface,
		"GET /nodes/{node}/storage":                   s.hNodeStorages,
		"GET /nodes/{node}/storage/{storage}/status":  s.hStorageStatus,
		"GET /nodes/{node}/storage/{storage}/content": s.hContentList,
		"GET /nodes/{node}/storage/{storage}/content/{volume}":       s.hContentGet,
		"DELETE /nodes/{node}/storage/{storage}/content/{volume}":    s.hContentDelete,
		"POST /nodes/{node}/storage/{storage}/download-url":          s.hDownloadURL,
		"GET /nodes/{node}/tasks":                                    s.hNodeTasks,
		"GET /nodes/{node}/tasks/{upid}":                             s.hTaskIndex,
		"DELETE /nodes/{node}/tasks/{upid}":                          s.hTaskStop,
		"GET /nodes/{node}/tasks/{upid}/status":                      s.hTaskStatus,
		"GET /nodes/{node}/tasks/{upid}/log":                         s.hTaskLog,
		"GET /nodes/{node}/qemu":                                     s.hQemuList,
		"POST /nodes/{node}/qemu":                                    s.hQemuCreate,
		"GET /nodes/{node}/qemu/{vmid}":                              s.hQemuIndex,
		"DELETE /nodes/{node}/qemu/{vmid}":                           s.hDestroy,
		"GET /nodes/{node}/qemu/{vmid}/config":                       s.hConfigGet,
		"POST /nodes/{node}/qemu/{vmid}/config":                      s.hConfigPost,
		"PUT /nodes/{node}/qemu/{vmid}/config":                       s.hConfigPut,
		"GET /nodes/{node}/qemu/{vmid}/pending":                      s.hPending,
		"GET /nodes/{node}/qemu/{vmid}/status":                       s.hStatusIndex,
		"GET /nodes/{node}/qemu/{vmid}/status/current":               s.hStatusCurrent,
		"POST /nodes/{node}/qemu/{vmid}/status/start":                s.hStart,
		"POST /nodes/{node}/qemu/{vmid}/status/stop":                 s.hStop,
		"POST /nodes/{node}/qemu/{vmid}/status/shutdown":             s.hShutdown,
		"POST /nodes/{node}/qemu/{vmid}/status/reboot":               s.hReboot,
		"POST /nodes/{node}/qemu/{vmid}/status/reset":                s.hReset,
		"POST /nodes/{node}/qemu/{vmid}/status/suspend":              s.hSuspend,
		"POST /nodes/{node}/qemu/{vmid}/status/resume":               s.hResume,
		"POST /nodes/{node}/qemu/{vmid}/clone":                       s.hQemuClone,
		"GET /nodes/{node}/qemu/{vmid}/migrate":                      s.hMigratePrecondition,
		"POST /nodes/{node}/qemu/{vmid}/migrate":                     s.hMigrate,
		"PUT /nodes/{node}/qemu/{vmid}/resize":                       s.hResize,
		"POST /nodes/{node}/qemu/{vmid}/move_disk":                   s.hMoveDisk,
		"POST /nodes/{node}/qemu/{vmid}/template":                    s.hTemplate,
		"PUT /nodes/{node}/qemu/{vmid}/unlink":                       s.hUnlink,
		"GET /nodes/{node}/qemu/{vmid}/cloudinit":                    s.hCloudInitPending,
		"PUT /nodes/{node}/qemu/{vmid}/cloudinit":                    s.hCloudInitRegenerate,
		"GET /nodes/{node}/qemu/{vmid}/cloudinit/dump":               s.hCloudInitDump,
		"GET /nodes/{node}/qemu/{vmid}/agent":                        s.hAgentIndex,
		"POST /nodes/{node}/qemu/{vmid}/agent":                       s.hAgentCommand,
		"POST /nodes/{node}/qemu/{vmid}/agent/ping":                  s.hAgentPing,
		"GET /nodes/{node}/qemu/{vmid}/agent/get-osinfo":             s.hAgentOSInfo,
		"GET /nodes/{node}/qemu/{vmid}/agent/get-host-name":          s.hAgentHostName,
		"GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces": s.hAgentInterfaces,
		"GET /nodes/{node}/qemu/{vmid}/agent/info":                   s.hAgentInfo,
		"POST /nodes/{node}/qemu/{vmid}/agent/shutdown":              s.hAgentShutdown,
	}
	for key := range h {
		verb, path, _ := strings.Cut(key, " ")
		path = strings.TrimSpace(path)
		if s.schema.Method(verb, path) == nil {
			return fmt.Errorf("lab: handler for %s has no entry in the embedded schema (add it to tests/lab/pveapi/gen and regenerate)", key)
		}
	}
	for _, m := range s.schema.Methods {
		if _, ok := h[m.Method+" "+m.Path]; !ok {
			return fmt.Errorf("lab: the embedded schema serves %s %s but the lab has no handler", m.Method, m.Path)
		}
	}
	s.handlers = h
	return nil
}
