package imagefactory

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"gopkg.in/yaml.v3"

	"github.com/proxmoxtalos/proxmoxtalos/provider/talosconfig"
)

// ParseSchematic reads a schematic as the factory returns it into the
// customizations the provider manages: extensions, kernel arguments and
// META. A schematic with anything else (overlay, SecureBoot, bootloader,
// embedded configuration, ...) is refused, since re-registering it without
// those would give another ID.
func ParseSchematic(data []byte) (talosconfig.Schematic, error) {
	var doc struct {
		Customization struct {
			ExtraKernelArgs []string `yaml:"extraKernelArgs"`
			Meta            []struct {
				Key   uint8  `yaml:"key"`
				Value string `yaml:"value"`
			} `yaml:"meta"`
			SystemExtensions struct {
				OfficialExtensions []string `yaml:"officialExtensions"`
			} `yaml:"systemExtensions"`
		} `yaml:"customization"`
	}

	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)

	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return talosconfig.Schematic{}, fmt.Errorf("the schematic holds more than extensions, kernel arguments and META, "+
			"which is all this provider manages (%w)", err)
	}

	s := talosconfig.Schematic{
		Extensions: doc.Customization.SystemExtensions.OfficialExtensions,
		KernelArgs: doc.Customization.ExtraKernelArgs,
	}
	for _, m := range doc.Customization.Meta {
		s.Meta = append(s.Meta, talosconfig.MetaValue{Key: m.Key, Value: m.Value})
	}

	return s, nil
}
