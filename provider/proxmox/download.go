package proxmox

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/proxmoxtalos/proxmoxtalos/provider/config"
	"github.com/proxmoxtalos/proxmoxtalos/provider/internal/enginelog"
	"github.com/proxmoxtalos/proxmoxtalos/provider/pve"
)

// Check validates the inputs at preview, including that the node and the
// storage exist and that no unmanaged file of that name would be overwritten.
func (*DownloadFile) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[DownloadFileArgs], error) {
	a, failures, err := infer.DefaultCheck[DownloadFileArgs](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 {
		return infer.CheckResponse[DownloadFileArgs]{Inputs: a, Failures: failures}, err
	}
	u := unknownPaths(req.NewInputs)
	if failures = validateDownload(a, u); len(failures) > 0 || !u.known("node") || !u.known("storage") {
		return infer.CheckResponse[DownloadFileArgs]{Inputs: a, Failures: failures}, nil
	}
	if config.Offline() {
		config.Skipped(ctx, config.CheckPrivileges, config.CheckInventory)
		return infer.CheckResponse[DownloadFileArgs]{Inputs: a}, nil
	}
	c, err := config.Client(ctx)
	if err != nil {
		return infer.CheckResponse[DownloadFileArgs]{Inputs: a}, err
	}
	ctx = pve.Planning(ctx) // a node that does not answer is a warning, not a wait
	if unchangedDownload(req.OldInputs, a, u) {
		// as for a VM (unchangedInputs): the node's state only
		v := &validator{u: u}
		_, err := downloadNode(ctx, c, v, a, false)
		return infer.CheckResponse[DownloadFileArgs]{Inputs: a, Failures: v.failures}, err
	}
	if failures := checkPrivileges(ctx, c, downloadNeeds(a.Node, a.Storage)); len(failures) > 0 {
		return infer.CheckResponse[DownloadFileArgs]{Inputs: a, Failures: failures}, nil
	}
	v := &validator{u: u}
	if err := checkDownloadAgainstCluster(ctx, c, v, a, req.OldInputs.Len() == 0); err != nil {
		return infer.CheckResponse[DownloadFileArgs]{Inputs: a}, err
	}
	return infer.CheckResponse[DownloadFileArgs]{Inputs: a, Failures: v.failures}, nil
}

// checkDownloadAgainstCluster validates what only the cluster knows: the node,
// the storage and its content types, and (for a new file) that no file of
// that name would be overwritten.
func checkDownloadAgainstCluster(ctx context.Context, c *pve.Client, v *validator, a DownloadFileArgs, isNew bool) error {
	if usable, err := downloadNode(ctx, c, v, a, isNew); err != nil || !usable {
		return err
	}
	info, ok, err := c.StorageOn(ctx, a.Node, a.Storage)
	if _, silent := pve.NodeSilent(err); silent && !isNew {
		enginelog.Logger(ctx).Warning(fmt.Sprintf("%v: %s on node %s cannot be checked now", err, a.volumeID(), a.Node))
		return nil
	} else if silent {
		v.fail("node", "%v: wait until it answers, or download to another node", err)
		return nil
	}
	if err != nil {
		return err
	}
	var found *pve.StorageInfo
	if ok {
		found = &info
	}
	if a.content() == "import" && v.u.known("content") {
		if msg := importContentUnsupported(c.Version()); msg != "" {
			v.fail("content", "%s", msg)
		}
	}
	switch {
	case found == nil:
		storages, err := c.Storages(ctx, a.Node)
		if err != nil {
			return err
		}
		names := make([]string, 0, len(storages))
		for _, s := range storages {
			names = append(names, s.Name)
		}
		v.fail("storage", "storage %q is not available on node %s; its storages are: %s", a.Storage, a.Node, strings.Join(names, ", "))
	case !found.Holds(string(a.content())):
		v.fail("storage", "storage %q on node %s is not configured for content %q (it holds %s): choose another "+
			"storage or add the content type to it", a.Storage, a.Node, a.content(), strings.Join(found.Content, ", "))
	case isNew && (a.Overwrite == nil || !*a.Overwrite) && v.u.known("fileName") && v.u.known("url"):
		return checkNoFileToOverwrite(ctx, c, v, a)
	}
	return nil
}

// downloadNode checks the download's node: one of the cluster, and online
// (else a failure for a new file, a warning for an existing one). usable is
// false when the storage checks cannot run.
func downloadNode(ctx context.Context, c *pve.Client, v *validator, a DownloadFileArgs, isNew bool) (usable bool, err error) {
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return false, err
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	if !slices.Contains(names, a.Node) {
		v.fail("node", "node %q is not a node of this Proxmox VE cluster; its nodes are: %s", a.Node, strings.Join(names, ", "))
		return false, nil
	}
	for _, n := range nodes {
		if n.Name != a.Node {
			continue
		}
		down, remedy := "node "+a.Node+" is offline", "start it"
		if n.Online {
			silence := c.Silence(a.Node) // an earlier read of this run got no answer (pve.NodeWait)
			if silence == nil {
				return true, nil
			}
			down, remedy = silence.Error(), "wait until it answers"
		}
		if isNew {
			v.fail("node", "%s: %s, or download to another node", down, remedy)
		} else {
			// an existing file: a node down must not stall every preview
			enginelog.Logger(ctx).Warning(fmt.Sprintf("%s: %s on it cannot be checked now", down, a.volumeID()))
		}
		return false, nil
	}
	return true, nil
}

// checkNoFileToOverwrite fails a new download whose file exists on the node,
// unless it is shared storage (used as it is) or an interrupted run of this
// resource left it (adopted).
func checkNoFileToOverwrite(ctx context.Context, c *pve.Client, v *validator, a DownloadFileArgs) error {
	_, exists, err := c.FindVolume(ctx, a.Node, a.Storage, a.volumeID())
	if err != nil || !exists {
		return err
	}
	if a.shared() {
		enginelog.Logger(ctx).Info(fmt.Sprintf("%s is on node %s already and shared: it is used as it is, not downloaded again", a.volumeID(), a.Node))
	} else if _, ours := interruptedDownload(ctx, c, a, resourceIdentity(ctx).id); ours {
		enginelog.Logger(ctx).Warning(fmt.Sprintf("%s on node %s was downloaded from %s by an interrupted run "+
			"(with this API token): it is adopted instead of downloaded again", a.volumeID(), a.Node, a.URL))
	} else {
		v.fail("fileName", "%s already exists on node %s: set overwrite: true to replace it, or adopt it with "+
			"`pulumi import proxmoxtalos:proxmox:DownloadFile <name> %s/%s`", a.volumeID(), a.Node, a.Node, a.volumeID())
	}
	return nil
}

// Diff: see diffDownload.
func (*DownloadFile) Diff(_ context.Context, req infer.DiffRequest[DownloadFileArgs, DownloadFileState]) (infer.DiffResponse, error) {
	return diffDownload(req.State, req.Inputs), nil
}

// Create downloads the file on the node and waits for the download task.
func (*DownloadFile) Create(ctx context.Context, req infer.CreateRequest[DownloadFileArgs]) (infer.CreateResponse[DownloadFileState], error) {
	a := req.Inputs
	st := DownloadFileState{DownloadFileArgs: a, FileName: a.fileName(), VolumeID: a.volumeID()}
	if req.DryRun {
		return infer.CreateResponse[DownloadFileState]{Output: st}, nil
	}
	ctx, cancel, c, err := operation(ctx, defaultCreateTimeout)
	defer cancel()
	if err != nil {
		return infer.CreateResponse[DownloadFileState]{}, err
	}
	// a finished download may be the file a replacement replaces: only a
	// create the state knows nothing of adopts it
	who := resourceIdentity(ctx)
	if d, ours := interruptedDownload(ctx, c, a, who.id); ours && (d.Running || (who.fresh && who.held != a.Node+"/"+st.VolumeID)) {
		if vol, ok := adoptDownload(ctx, c, a, st, d); ok {
			st.Size = int(vol.Size)
			return infer.CreateResponse[DownloadFileState]{ID: a.Node + "/" + st.VolumeID, Output: st}, nil
		}
	}
	// Proxmox itself refuses to download over a file that exists
	// (PVE::Tools download_file_from_url: "refusing to override existing
	// file"), so a download is sent without a fresh storage list after its
	// Check: a file that appeared since fails it, as Check would have. A
	// shared file Check saw moments ago (its list, kept for seconds) is
	// used as it is, and one that appeared since is found after the
	// refusal. An overwrite deletes the file first, and with a checksum
	// Proxmox keeps a matching file ("no need to download"), which would
	// make it this resource's: those look afresh.
	vol, exists, err := existingBeforeDownload(ctx, c, a, st.VolumeID)
	if err != nil {
		return infer.CreateResponse[DownloadFileState]{}, err
	}
	if exists && a.shared() {
		return sharedFileAsIs(ctx, a, st, vol)
	}
	if exists {
		if a.Overwrite == nil || !*a.Overwrite {
			return infer.CreateResponse[DownloadFileState]{}, fmt.Errorf("%s already exists on node %s: set "+
				"overwrite: true to replace it, or import it", st.VolumeID, a.Node)
		}
		pve.Logf(ctx, "deleting the existing %s on node %s (overwrite: true)", st.VolumeID, a.Node)
		if err := c.DeleteVolume(ctx, a.Node, a.Storage, st.VolumeID); err != nil {
			return infer.CreateResponse[DownloadFileState]{}, err
		}
	}
	r := pve.DownloadRequest{Node: a.Node, Storage: a.Storage, URL: pve.DownloadURL(a.URL, who.id), Content: string(a.content()),
		FileName: st.FileName, VerifyCertificates: a.VerifyCertificates}
	if a.Checksum != nil && a.ChecksumAlgorithm != nil {
		r.Checksum, r.ChecksumAlgorithm = *a.Checksum, string(*a.ChecksumAlgorithm)
	}
	if a.Decompression != nil {
		r.Compression = string(*a.Decompression)
	}
	pve.Logf(ctx, "node %s is downloading %s into %s", a.Node, a.URL, st.VolumeID)
	id := a.Node + "/" + st.VolumeID
	if err := c.DownloadURL(ctx, r); err != nil {
		if refusedExisting(err) {
			if a.shared() {
				if vol, found, ferr := c.FindVolume(ctx, a.Node, a.Storage, st.VolumeID); ferr == nil && found {
					return sharedFileAsIs(ctx, a, st, vol)
				}
			}
			// another client's file: it stays out of the state
			return infer.CreateResponse[DownloadFileState]{}, fmt.Errorf("%s already exists on node %s: set "+
				"overwrite: true to replace it, or import it", st.VolumeID, a.Node)
		}
		return downloadFailed(ctx, c, a, st, fmt.Errorf("downloading %s to %s on node %s: %w", a.URL, st.VolumeID, a.Node, err))
	}
	vol, found, err := c.FindVolume(ctx, a.Node, a.Storage, st.VolumeID)
	if err != nil || !found {
		if err == nil {
			err = fmt.Errorf("the download task succeeded but %s is not in storage %s", st.VolumeID, a.Storage)
		}
		return infer.CreateResponse[DownloadFileState]{ID: id, Output: st}, infer.ResourceInitFailedError{Reasons: []string{err.Error()}}
	}
	st.Size = int(vol.Size)
	return infer.CreateResponse[DownloadFileState]{ID: id, Output: st}, nil
}

// existingBeforeDownload looks for the file a download is about to make,
// where it must (see Create): an overwrite or a checksum looks afresh, a
// shared file in the list its Check read moments ago, others not at all.
func existingBeforeDownload(ctx context.Context, c *pve.Client, a DownloadFileArgs, volumeID string) (pve.Volume, bool, error) {
	switch {
	case (a.Overwrite != nil && *a.Overwrite) || a.Checksum != nil:
		return c.FindVolume(ctx, a.Node, a.Storage, volumeID)
	case a.shared():
		return c.FindRecentVolume(ctx, a.Node, a.Storage, volumeID, pve.RecentVolumeMaxAge)
	}
	return pve.Volume{}, false, nil
}

// downloadFailed is the end of a create whose download call failed: the
// wait may have failed while the task went on, so a file that exists now
// is kept in the state, or the next `up` would refuse to overwrite a file
// Pulumi does not know.
func downloadFailed(ctx context.Context, c *pve.Client, a DownloadFileArgs, st DownloadFileState, err error) (infer.CreateResponse[DownloadFileState], error) {
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), defaultReadTimeout)
	defer fcancel()
	if _, found, ferr := c.FindVolume(fctx, a.Node, a.Storage, st.VolumeID); ferr == nil && found {
		return infer.CreateResponse[DownloadFileState]{ID: a.Node + "/" + st.VolumeID, Output: st}, infer.ResourceInitFailedError{Reasons: []string{err.Error()}}
	}
	return infer.CreateResponse[DownloadFileState]{}, err
}

// sharedFileAsIs is the create of a shared file that exists: it is used as
// it is.
func sharedFileAsIs(ctx context.Context, a DownloadFileArgs, st DownloadFileState, vol pve.Volume) (infer.CreateResponse[DownloadFileState], error) {
	pve.Logf(ctx, "%s is on node %s already and shared: it is used as it is, not downloaded again", st.VolumeID, a.Node)
	st.Size = int(vol.Size)
	return infer.CreateResponse[DownloadFileState]{ID: a.Node + "/" + st.VolumeID, Output: st}, nil
}

// refusedExisting reports Proxmox's refusal to download over a file that
// exists (PVE::Tools download_file_from_url, in the download task).
func refusedExisting(err error) bool {
	return strings.Contains(err.Error(), "refusing to override existing file")
}

// parseDownloadID reads "<node>/<storage>:<content>/<file>".
func parseDownloadID(id string) (node, storage, content, file string, err error) {
	node, volid, ok := strings.Cut(id, "/")
	storage, rest, ok2 := strings.Cut(volid, ":")
	content, file, ok3 := strings.Cut(rest, "/")
	if !ok || !ok2 || !ok3 || node == "" || storage == "" || file == "" {
		return "", "", "", "", fmt.Errorf("%q is not a file id: use <node>/<storage>:<content>/<file>, "+
			"for example pve1/local:iso/talos.iso", id)
	}
	return node, storage, content, file, nil
}

// Read checks that the file is still there; a file deleted outside Pulumi
// leaves the state. Without state (import) the inputs come from the ID.
func (*DownloadFile) Read(ctx context.Context, req infer.ReadRequest[DownloadFileArgs, DownloadFileState]) (
	infer.ReadResponse[DownloadFileArgs, DownloadFileState], error) {
	ctx, cancel, c, err := operation(ctx, defaultReadTimeout)
	defer cancel()
	if err != nil {
		return infer.ReadResponse[DownloadFileArgs, DownloadFileState]{}, err
	}
	node, storage, content, file, err := parseDownloadID(req.ID)
	if err != nil {
		return infer.ReadResponse[DownloadFileArgs, DownloadFileState]{}, err
	}
	volid := storage + ":" + content + "/" + file
	if req.Inputs.Node != "" && nodeOffline(ctx, c, node) {
		enginelog.Logger(ctx).Warning(fmt.Sprintf("node %s is offline: %s was not refreshed", node, volid))
		return infer.ReadResponse[DownloadFileArgs, DownloadFileState](req), nil
	}
	vol, found, err := c.FindVolume(ctx, node, storage, volid)
	if err != nil || !found {
		return infer.ReadResponse[DownloadFileArgs, DownloadFileState]{}, err
	}
	in := req.Inputs
	if in.Node == "" { // import
		in = DownloadFileArgs{Node: node, Storage: storage, Content: ptr(DownloadContent(content)), FileName: ptr(file)}
	}
	st := req.State
	st.DownloadFileArgs = in
	st.FileName, st.VolumeID, st.Size = file, volid, int(vol.Size)
	return infer.ReadResponse[DownloadFileArgs, DownloadFileState]{ID: req.ID, Inputs: in, State: st}, nil
}

// Update records the settings that only matter for the next download.
func (*DownloadFile) Update(_ context.Context, req infer.UpdateRequest[DownloadFileArgs, DownloadFileState]) (
	infer.UpdateResponse[DownloadFileState], error) {
	st := req.State
	st.DownloadFileArgs = req.Inputs
	return infer.UpdateResponse[DownloadFileState]{Output: st}, nil
}

// Delete removes the file; a file that is already gone is success.
func (*DownloadFile) Delete(ctx context.Context, req infer.DeleteRequest[DownloadFileState]) (infer.DeleteResponse, error) {
	ctx, cancel, c, err := operation(ctx, defaultDeleteTimeout)
	defer cancel()
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	node, storage, content, file, err := parseDownloadID(req.ID)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	volid := storage + ":" + content + "/" + file
	if err := awaitNode(ctx, c, node, volid, "deleted"); err != nil {
		return infer.DeleteResponse{}, err
	}
	if req.State.shared() {
		users, err := c.VolumeUsers(ctx, node, storage, volid)
		if err != nil {
			return infer.DeleteResponse{}, fmt.Errorf("%s on node %s is shared: it is deleted only when no VM uses it, "+
				"and the VMs could not be read: %w", volid, node, err)
		}
		if len(users) > 0 {
			enginelog.Logger(ctx).Warning(fmt.Sprintf("%s on node %s is left in place: it is shared and still used by %s",
				volid, node, describeVMs(users)))
			return infer.DeleteResponse{}, nil
		}
	}
	return infer.DeleteResponse{}, c.DeleteVolume(ctx, node, storage, volid)
}

// interruptedDownload finds the download of this file that a create of the
// same resource started and could not record (see pve identity.go): the
// file's newest download task, carrying the resource's identity, running
// or done.
func interruptedDownload(ctx context.Context, c *pve.Client, a DownloadFileArgs, id string) (pve.DownloadTask, bool) {
	if id == "" {
		return pve.DownloadTask{}, false
	}
	d, found, err := c.LastDownload(ctx, a.Node, a.fileName())
	if err == nil && found && d.Running && d.URL == "" {
		// it runs and its log has not named its URL yet (the worker forks,
		// then download_file_from_url prints it): whoever started it, a
		// second download of the file now would race it, so it is awaited
		// and read again
		pve.Logf(ctx, "a download of %s on node %s runs and has not said from where yet: waiting for it", a.fileName(), a.Node)
		_ = c.WaitTask(ctx, d.UPID)
		d, found, err = c.LastDownload(ctx, a.Node, a.fileName())
	}
	if err != nil || !found || d.URL != pve.DownloadURL(a.URL, id) {
		return d, false
	}
	ok, _ := pve.TaskSucceeded(d.Status)
	return d, d.Running || ok
}

// adoptDownload waits for an interrupted run's download (if it still runs)
// and returns the file it made.
func adoptDownload(ctx context.Context, c *pve.Client, a DownloadFileArgs, st DownloadFileState, d pve.DownloadTask) (pve.Volume, bool) {
	if d.Running {
		pve.Logf(ctx, "an interrupted run's download of %s into %s on node %s is still running: waiting for it",
			a.URL, st.VolumeID, a.Node)
		if err := c.WaitTask(ctx, d.UPID); err != nil {
			pve.Logf(ctx, "that download failed (%v): downloading again", err)
			return pve.Volume{}, false
		}
	}
	vol, found, err := c.FindVolume(ctx, a.Node, a.Storage, st.VolumeID)
	if err != nil || !found {
		return pve.Volume{}, false
	}
	pve.Warnf(ctx, "adopting %s on node %s: an interrupted run downloaded it from %s", st.VolumeID, a.Node, a.URL)
	return vol, true
}

func (a DownloadFileArgs) shared() bool { return a.Shared != nil && *a.Shared }

// describeVMs: "VM 104 (lab-cp-1 on pve1), VM 105 (...)".
func describeVMs(vms []pve.ClusterVM) string {
	parts := make([]string, 0, len(vms))
	for _, vm := range vms {
		parts = append(parts, fmt.Sprintf("VM %d (%s on %s)", vm.VMID, vm.Name, vm.Node))
	}
	return strings.Join(parts, ", ")
}
