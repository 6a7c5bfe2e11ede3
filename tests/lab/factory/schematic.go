package factory

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"
)

// Schematic is the Image Factory's schematic document. Field names, order,
// YAML tags and omitempty rules follow siderolabs/image-factory
// pkg/schematic/schematic.go (commit 26b95cac): the ID is the sha256 of this
// struct marshalled, so any difference changes every ID.
type Schematic struct {
	Owner         string        `yaml:"owner,omitempty"`
	Overlay       Overlay       `yaml:"overlay,omitempty"`
	Customization Customization `yaml:"customization"`
}

// Customization is the Talos image customization.
type Customization struct {
	EmbeddedMachineConfiguration string                  `yaml:"embeddedMachineConfiguration,omitempty"`
	ExtraKernelArgs              []string                `yaml:"extraKernelArgs,omitempty"`
	Meta                         []MetaValue             `yaml:"meta,omitempty"`
	SystemExtensions             SystemExtensions        `yaml:"systemExtensions,omitempty"`
	Bootloader                   Bootloader              `yaml:"bootloader,omitempty"`
	SecureBoot                   SecureBootCustomization `yaml:"secureboot,omitempty"`
	DiskImage                    DiskImageCustomization  `yaml:"diskImage,omitempty"`
}

// MetaValue is one initial META key and value.
type MetaValue struct {
	Key   uint8  `yaml:"key"`
	Value string `yaml:"value"`
}

// SystemExtensions lists official extensions by name (siderolabs/...).
type SystemExtensions struct {
	OfficialExtensions []string `yaml:"officialExtensions,omitempty"`
}

// Overlay is an SBC overlay (not used on Proxmox, accepted as the factory does).
type Overlay struct {
	Image   string         `yaml:"image"`
	Name    string         `yaml:"name"`
	Options map[string]any `yaml:"options,omitempty"`
}

// SecureBootCustomization are SecureBoot options.
type SecureBootCustomization struct {
	EnrollKeys                   string `yaml:"enrollKeys,omitempty"`
	IncludeWellKnownCertificates bool   `yaml:"includeWellKnownCertificates,omitempty"`
}

// DiskImageCustomization are disk image options.
type DiskImageCustomization struct {
	SectorSize uint `yaml:"sectorSize,omitempty"`
}

// Bootloader is machinery's imageropts.BootloaderKind: an int enum whose
// text forms are its enumer line comments (none, dual-boot, sd-boot, grub);
// none is the zero value and so omitted from the canonical form.
type Bootloader int

var bootloaderNames = []string{"none", "dual-boot", "sd-boot", "grub"}

// MarshalText writes the enum's name.
func (b Bootloader) MarshalText() ([]byte, error) {
	if b < 0 || int(b) >= len(bootloaderNames) {
		return nil, fmt.Errorf("bootloader %d is out of range", int(b))
	}

	return []byte(bootloaderNames[b]), nil
}

// UnmarshalText reads the enum's name; the error text is enumer's.
func (b *Bootloader) UnmarshalText(text []byte) error {
	for i, n := range bootloaderNames {
		if n == string(text) {
			*b = Bootloader(i)
			return nil
		}
	}

	return fmt.Errorf("%s does not belong to BootloaderKind values", text)
}

// errInvalid marks errors the factory answers with 400 Bad Request
// (schematic.InvalidErrorTag in image-factory).
var errInvalid = errors.New("invalid schematic")

// invalidError is an error tagged as invalid that prints only its cause.
type invalidError struct{ err error }

func (e invalidError) Error() string        { return e.err.Error() }
func (e invalidError) Is(target error) bool { return target == errInvalid }

// ParseSchematic decodes a schematic as the factory does: YAML (JSON is a
// subset), unknown fields refused; the Content-Type is not consulted.
func ParseSchematic(data []byte) (*Schematic, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)

	var s Schematic

	if err := dec.Decode(&s); err != nil {
		return nil, invalidError{err}
	}

	return &s, nil
}

// Validate is the community edition's check: owner needs the Enterprise
// edition (image-factory pkg/schematic Schematic.validate).
func (s *Schematic) Validate() error {
	if s.Owner != "" {
		return invalidError{errors.New("owner field is only supported in Enterprise edition")}
	}

	return nil
}

// Marshal is the canonical form, the bytes the ID hashes.
func (s *Schematic) Marshal() ([]byte, error) {
	return yaml.Marshal(s)
}

// ID is the hex sha256 of the canonical form.
func (s *Schematic) ID() (string, error) {
	data, err := s.Marshal()
	if err != nil {
		return "", err
	}

	return idOf(data), nil
}

// idOf is the ID of a schematic in canonical form.
func idOf(canonical []byte) string {
	sum := sha256.Sum256(canonical)

	return hex.EncodeToString(sum[:])
}
