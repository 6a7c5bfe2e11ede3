package proxmox

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
)

// pve-storage src/PVE/Storage.pm normalize_content_filename replaces any
// other character with '_', which would make the volume differ from the name
// given; and the extensions download-url accepts per content type
// (ISO_EXT_RE_0, UPLOAD_IMPORT_EXT_RE_1).
var (
	safeFileNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]+$`)
	isoExtRE       = regexp.MustCompile(`(?i)\.(iso|img)$`)
	importExtRE    = regexp.MustCompile(`\.(ova|qcow2|raw|vmdk)$`)
	hexRE          = regexp.MustCompile(`^[0-9a-fA-F]+$`)
	checksumLength = map[ChecksumAlgorithm]int{"md5": 32, "sha1": 40, "sha224": 56, "sha256": 64, "sha384": 96, "sha512": 128}
)

func (a DownloadFileArgs) content() DownloadContent {
	if a.Content != nil {
		return *a.Content
	}
	return "iso"
}

// fileName is the given name, else the URL's last path segment without a
// compression suffix.
func (a DownloadFileArgs) fileName() string {
	if a.FileName != nil {
		return *a.FileName
	}
	u, err := url.Parse(a.URL)
	if err != nil {
		return ""
	}
	name := path.Base(u.Path)
	if a.Decompression != nil {
		name = strings.TrimSuffix(name, "."+string(*a.Decompression))
	}
	if name == "." || name == "/" {
		return ""
	}
	return name
}

func (a DownloadFileArgs) volumeID() string {
	return fmt.Sprintf("%s:%s/%s", a.Storage, a.content(), a.fileName())
}

// validateDownload checks the inputs without contacting Proxmox.
func validateDownload(a DownloadFileArgs, u unknowns) []p.CheckFailure {
	v := &validator{u: u}
	v.check("node", a.Node == "", "node is required: the Proxmox VE node that downloads the file")
	v.check("storage", !storageIDRE.MatchString(a.Storage), "storage %q is not a storage ID (for example local)", a.Storage)
	parsed, err := url.Parse(a.URL)
	v.check("url", err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "",
		"url %q must be an http or https URL (the download-url API accepts nothing else)", a.URL)
	if !u.known("url") || !u.known("fileName") {
		return v.failures
	}
	name := a.fileName()
	where := "fileName"
	if a.FileName == nil {
		where = "url"
	}
	switch {
	case name == "":
		v.check(where, true, "no file name can be taken from the URL: set fileName")
	case !safeFileNameRE.MatchString(name):
		v.check(where, true, "file name %q may only contain letters, digits, '_', '.' and '-' (Proxmox would rename "+
			"it); set fileName", name)
	case a.content() == "iso" && !isoExtRE.MatchString(name):
		v.check(where, true, "file name %q must end in .iso or .img for content iso; set fileName", name)
	case a.content() == "import" && !importExtRE.MatchString(name):
		v.check(where, true, "file name %q must end in .raw, .qcow2, .vmdk or .ova for content import; set fileName", name)
	}
	if a.Decompression != nil {
		v.check("decompression", a.content() != "iso", "decompression works for ISOs only (Proxmox: decompression "+
			"not supported for %s); download an uncompressed image", a.content())
	}
	if a.Checksum != nil {
		v.check("checksumAlgorithm", a.ChecksumAlgorithm == nil, "checksum needs checksumAlgorithm (for example sha256)")
		if a.ChecksumAlgorithm != nil {
			want := checksumLength[*a.ChecksumAlgorithm]
			v.check("checksum", !hexRE.MatchString(*a.Checksum) || len(*a.Checksum) != want,
				"checksum must be %d hex digits for %s, got %q", want, *a.ChecksumAlgorithm, *a.Checksum)
		}
	} else {
		v.check("checksumAlgorithm", a.ChecksumAlgorithm != nil, "checksumAlgorithm is set without a checksum")
	}
	return v.failures
}

// diffDownload: anything that changes the file replaces it; the overwrite
// rule and certificate checking only matter for the next download, and
// sharing only for the next create and the delete.
func diffDownload(olds DownloadFileState, news DownloadFileArgs) p.DiffResponse {
	o := olds.DownloadFileArgs
	o.FileName = &olds.FileName
	n := news
	if n.FileName == nil {
		n.FileName = ptr(news.fileName())
	}
	if o.URL == "" {
		o.URL = n.URL // imported: the URL it came from cannot be known
	}
	if o.Content == nil && n.Content != nil && *n.Content == "iso" || o.Content != nil && n.Content == nil && *o.Content == "iso" {
		o.Content = n.Content
	}
	before, after := flatten(o), flatten(n)
	detailed := map[string]p.PropertyDiff{}
	replace := false
	for _, k := range unionKeys(before, after) {
		ov, inOld := before[k]
		nv, inNew := after[k]
		if inOld == inNew && ov == nv {
			continue
		}
		kind := p.Update
		switch {
		case !inOld:
			kind = p.Add
		case !inNew:
			kind = p.Delete
		}
		if k != "overwrite" && k != "verifyCertificates" && k != "shared" {
			replace = true
			kind = map[p.DiffKind]p.DiffKind{p.Add: p.AddReplace, p.Delete: p.DeleteReplace, p.Update: p.UpdateReplace}[kind]
		}
		detailed[k] = p.PropertyDiff{Kind: kind, InputDiff: true}
	}
	return p.DiffResponse{
		HasChanges:   len(detailed) > 0,
		DetailedDiff: detailed,
		// the new file has the old one's name: it must go first
		DeleteBeforeReplace: replace && news.Node == olds.Node && news.volumeID() == olds.VolumeID,
	}
}
