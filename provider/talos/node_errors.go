package talos

import (
	"fmt"
	"strings"
)

// nodeErr says what failed on a node, naming the node once: talosapi's
// errors name the node they are about, so a wrapper that named it too said
// it twice ("control plane components of node X: ... node X runs does not
// parse"). doing has one %s where the node is named: by label (labelNode:
// its hostname and address) when err does not name it, as "the node" when
// err does.
func nodeErr(node, label, doing string, err error) error {
	if strings.Contains(err.Error(), "node "+node) {
		label = "the node"
	} else {
		label = "node " + label
	}

	return fmt.Errorf("%s: %w", fmt.Sprintf(doing, label), err)
}
