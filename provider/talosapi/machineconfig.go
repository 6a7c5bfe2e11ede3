package talosapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/cosi-project/runtime/pkg/state"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
	runtimeres "github.com/siderolabs/talos/pkg/machinery/resources/runtime"

	"github.com/proxmoxtalos/proxmoxtalos/provider/memo"
)

// errConfigParse is a machine configuration given to the provider (the
// machineConfiguration input) that does not parse. It never carries the
// parser's text: that can quote a value, and configurations hold secrets.
var errConfigParse = errors.New("machineConfiguration does not parse as a Talos machine configuration (the parser's words are withheld: " +
	"they can quote a value, and the configuration holds secrets); check the text with talosctl validate, or generate it with the getMachineConfiguration function")

// nodeConfigError is errConfigParse for a text a node answered: the
// configuration it runs (configres.ActiveID) or the one saved for its next
// boot (PersistentID). Nobody gave this provider that text, and the node
// accepted it: the advice is to look at it and at the node's version, not
// to validate an input.
type nodeConfigError struct {
	node string
	id   resource.ID
}

func (e *nodeConfigError) Error() string {
	which := "runs"
	if e.id == configres.PersistentID {
		which = "saved for its next boot"
	}

	return fmt.Sprintf("the machine configuration node %s %s does not parse with this provider's Talos machinery (the parser's words "+
		"are withheld: they can quote a value, and the configuration holds secrets); a Talos newer than the provider supports may "+
		"have written it: see the text with `talosctl get machineconfig %s -n %s -o yaml` and the node's version with `talosctl version -n %s`",
		e.node, which, e.id, e.node, e.node)
}

func (e *nodeConfigError) Unwrap() error { return errConfigParse }

// loadConfig parses a machine configuration.
func loadConfig(b []byte) (config.Provider, error) {
	cfg, err := configloader.NewFromBytes(b)
	if err != nil {
		return nil, errConfigParse
	}

	return cfg, nil
}

// digestOf is a stable fingerprint of a configuration's contents: the
// documents re-encoded without comments, hashed. Two configs that differ only
// in comments, key order or whitespace have the same digest.
func digestOf(cfg config.Provider) (string, error) {
	b, err := cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	if err != nil {
		return "", fmt.Errorf("encoding machine configuration: %w", err)
	}

	return textDigest(b), nil
}

// ConfigDigest is the fingerprint of a machine configuration as this package
// compares it with what a node runs. It is safe to store in plain state: it
// is a SHA-256 over the whole document set.
func ConfigDigest(machineConfig []byte) (string, error) {
	f := factsOf(machineConfig)
	if f.noDigest {
		f = parseFacts(machineConfig)
		configFactsByText.Put(memo.KeyOf(string(machineConfig)), f)
	}

	if f.err != nil {
		return "", f.err
	}

	return f.digest, f.digestErr
}

// ConfigHasDigest reports whether ConfigDigest(machineConfig) is digest (a
// ConfigDigest kept in state), without parsing and encoding the text when it
// is already in the form the digest hashes: SHA-256 of the text itself equal
// to digest. Why that answer is ConfigDigest's: every digest is the SHA-256
// of an encoding without comments (digestOf), so a text whose own SHA-256 is
// digest is such an encoding, byte for byte; and parsing such an encoding and
// encoding it again gives the same text (talosconfig's normalize form rests
// on that too; TestGeneratedConfigurationsHashToTheirDigest), so its
// ConfigDigest is digest. Every configuration the component generates is in
// that form, and a node runs the text it was given: a no-op preview's Diff
// answers "unchanged" for each node without encoding its configuration (issue
// 14: the digests were ~17 ms of a 60-node no-op preview). Any other text,
// and every mismatch, is answered by ConfigDigest as before.
func ConfigHasDigest(machineConfig []byte, digest string) (bool, error) {
	if digest != "" && textDigest(machineConfig) == digest {
		return true, nil
	}

	d, err := ConfigDigest(machineConfig)
	if err != nil {
		return false, err
	}

	return d == digest, nil
}

// textDigest is the SHA-256 of a text as it is, in digestOf's form.
func textDigest(b []byte) string {
	sum := sha256.Sum256(b)

	return hex.EncodeToString(sum[:])
}

// configFacts are what this package reads off a configuration text, all
// from one parse. A preview asks several of one text (the reading of what
// each node runs, ConfigurationApply's Check and Diff, the component's
// summary), each answer depends on the text alone, and parsing it is most
// of their cost: they are kept by content for the process (memo).
type configFacts struct {
	digest       string
	digestErr    error
	installImage string
	kubeletImage string
	err          error // the text does not parse
	// noDigest: kept from a parse made for the images alone (keepFacts),
	// without the digest (an encoding of the whole text); ConfigDigest
	// parses the text when it is asked.
	noDigest bool
}

var configFactsByText memo.Cache[configFacts]

func factsOf(machineConfig []byte) configFacts {
	return configFactsByText.Do(memo.KeyOf(string(machineConfig)), func() configFacts { return parseFacts(machineConfig) })
}

func parseFacts(machineConfig []byte) configFacts {
	cfg, err := loadConfig(machineConfig)
	if err != nil {
		return configFacts{err: err}
	}

	return factsOfConfig(cfg, true)
}

// keepFacts keeps the facts of a text that was parsed already (cfg is
// configloader's parse of machineConfig): a node's active configuration
// arrives parsed (COSI's MachineConfig resource parses it on receipt), and
// asking its facts later would parse it again. The digest only when asked
// for (withDigest): it encodes the whole text.
func keepFacts(machineConfig []byte, cfg config.Provider, withDigest bool) {
	configFactsByText.Do(memo.KeyOf(string(machineConfig)), func() configFacts { return factsOfConfig(cfg, withDigest) })
}

func factsOfConfig(cfg config.Provider, withDigest bool) configFacts {
	var f configFacts

	if withDigest {
		f.digest, f.digestErr = digestOf(cfg)
	} else {
		f.noDigest = true
	}

	if m := cfg.Machine(); m != nil {
		f.installImage = m.Install().Image()
		f.kubeletImage = m.Kubelet().Image()
	}

	return f
}

// NodeConfig is what a configured node says about its configuration.
type NodeConfig struct {
	// Active is the configuration the node runs now ("v1alpha1" resource).
	Active []byte
	// ActiveDigest is ConfigDigest of Active.
	ActiveDigest string
	// PersistentDigest is the digest of the configuration saved for the next
	// boot ("persistent" resource). It differs from ActiveDigest after a
	// staged apply, or while a try-mode apply waits for its rollback.
	// Empty when the node does not serve it.
	PersistentDigest string
}

// readActiveConfig reads the active MachineConfig resource's text, and keeps
// its facts (the images) without the digest: its one caller, the component's
// reading of what each node runs, needs the kubelet image of each. A node that
// runs the text it was given answers the same bytes (a configuration loaded
// from bytes is read only and its Bytes are those: machinery
// config/container Container.Bytes), and then neither the summary
// (configEffect: the same text) nor ConfigurationApply's Diff
// (ConfigHasDigest: a generated text is in the digest's form) encodes it for
// its digest; a text that differs is digested when it is compared, from the
// text (issue 14: these digests were ~17 ms of a 60-node no-op preview).
func readActiveConfig(ctx context.Context, c *Conn) (*NodeConfig, error) {
	return readActive(ctx, c, false)
}

// readActive reads the active MachineConfig resource's text and keeps its
// facts, the digest too when withDigest.
func readActive(ctx context.Context, c *Conn, withDigest bool) (*NodeConfig, error) {
	// Parsed on receipt, as the resource parses itself (getMachineConfig);
	// raw is the text the node answered, cfg's Bytes.
	raw, cfg, err := getMachineConfig(c.nodeContext(ctx), c.client.COSI, configres.ActiveID)
	if errors.Is(err, errConfigParse) {
		return nil, &nodeConfigError{node: c.target.nodeHost(), id: configres.ActiveID}
	}

	if err != nil {
		return nil, fmt.Errorf("reading the node's active machine configuration: %s", statusMessage(err))
	}

	keepFacts(raw, cfg, withDigest)

	return &NodeConfig{Active: raw}, nil
}

// readRunningConfig reads the active MachineConfig resource with its
// digest, through COSI, as `talosctl get machineconfig` does (MachineConfig
// is a sensitive resource: reading it needs the os:admin role).
func readRunningConfig(ctx context.Context, c *Conn) (*NodeConfig, error) {
	nc, err := readActive(ctx, c, true)
	if err != nil {
		return nil, err
	}

	// ConfigDigest of the text the node answered: the same text as the
	// configuration applied to it, whose digest the preview's Check and
	// Diff ask for too (kept by content).
	if nc.ActiveDigest, err = ConfigDigest(nc.Active); err != nil {
		return nil, err
	}

	return nc, nil
}

// readNodeConfig is readRunningConfig and the persistent MachineConfig
// resource (the configuration saved for the next boot).
func readNodeConfig(ctx context.Context, c *Conn) (*NodeConfig, error) {
	nc, err := readRunningConfig(ctx, c)
	if err != nil {
		return nil, err
	}

	// Parsed as the active one is (getMachineConfig): COSI's own parse of
	// the typed resource put configloader's words (which can quote a
	// value) into an error that was then dropped as permanent.
	persistent, pcfg, err := getMachineConfig(c.nodeContext(ctx), c.client.COSI, configres.PersistentID)
	switch {
	case err == nil:
		keepFacts(persistent, pcfg, true)

		if nc.PersistentDigest, err = ConfigDigest(persistent); err != nil {
			return nil, err
		}
	case errors.Is(err, errConfigParse):
		return nil, &nodeConfigError{node: c.target.nodeHost(), id: configres.PersistentID}
	case state.IsNotFoundError(err):
	default:
		if classify(err) != failPermanent {
			return nil, fmt.Errorf("reading the node's persistent machine configuration: %s", statusMessage(err))
		}
	}

	return nc, nil
}

// readStage reads the MachineStatus resource: the boot stage (booting,
// running, rebooting, upgrading, ...). ok is false when it was not read.
func readStage(ctx context.Context, c *Conn) (stage runtimeres.MachineStage, ok bool) {
	stage, err := readMachineStage(ctx, c)

	return stage, err == nil
}

// readMachineStage is readStage with the read's error.
func readMachineStage(ctx context.Context, c *Conn) (runtimeres.MachineStage, error) {
	ms, err := safe.StateGetByID[*runtimeres.MachineStatus](c.nodeContext(ctx), c.client.COSI, runtimeres.MachineStatusID)
	if err != nil {
		return runtimeres.MachineStageUnknown, err
	}

	return ms.TypedSpec().Stage, nil
}

// installDiskMissing checks the configuration's install disk against the
// disks a maintenance-mode node reports, so that a config naming /dev/sda on
// a virtio-only VM fails at once instead of after the node loops waiting for
// its system disk. Only plain kernel device names are checked: by-id paths
// and disk selectors are matched by Talos itself.
func installDiskMissing(cfg config.Provider, disks []string) string {
	if cfg.Machine() == nil {
		return ""
	}

	want := cfg.Machine().Install().Disk()
	if want == "" || !strings.HasPrefix(want, "/dev/") || strings.Contains(want, "/dev/disk/") || len(disks) == 0 {
		return ""
	}

	for _, d := range disks {
		if d == want {
			return ""
		}
	}

	return want
}

// ConfigInstallImage is the installer image a machine configuration names
// (machine.install.image), "" when it names none.
func ConfigInstallImage(machineConfig []byte) (string, error) {
	f := factsOf(machineConfig)

	return f.installImage, f.err
}

// ConfigKubeletImage is the kubelet image a machine configuration names
// (machine.kubelet.image), "" when it names none or does not parse.
func ConfigKubeletImage(machineConfig []byte) string {
	return factsOf(machineConfig).kubeletImage
}
