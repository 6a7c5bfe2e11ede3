package talosapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
)

// SameActiveReadings reads node's active configuration through via (or via's
// own node when node is "") as readActive does and as the typed COSI resource
// does (MachineConfig.UnmarshalProto, what readActive used before): an error
// unless both give the same text, documents and facts.
func SameActiveReadings(ctx context.Context, via *Conn, node string) error {
	c := via
	if node != "" {
		c = &Conn{Mode: ModeSecure, client: via.client, target: Target{Node: node, Endpoints: []string{via.target.Node}, Creds: via.target.Creds}}
	}

	raw, cfg, err := getMachineConfig(c.nodeContext(ctx), c.client.COSI, configres.ActiveID)
	typed, terr := safe.StateGetByID[*configres.MachineConfig](c.nodeContext(ctx), c.client.COSI, configres.ActiveID)

	if err != nil || terr != nil {
		return fmt.Errorf("getMachineConfig: %v; typed: %v", err, terr)
	}

	b, _ := typed.Provider().Bytes() //nolint:errcheck // read only: its text

	encNew, err1 := cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	encOld, err2 := typed.Provider().EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))

	switch {
	case err1 != nil || err2 != nil:
		return errors.Join(err1, err2)
	case string(raw) != string(b):
		return errors.New("the texts differ")
	case string(encNew) != string(encOld):
		return errors.New("the documents differ")
	case factsOfConfig(cfg, true) != factsOfConfig(typed.Provider(), true):
		return errors.New("the facts differ")
	}

	return nil
}
