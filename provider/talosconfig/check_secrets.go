package talosconfig

import (
	"fmt"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
)

// NewCheckSecrets is NewSecrets for configurations that are only generated
// to be checked (a preview's), never given to a node. Its Kubernetes
// service account key is ECDSA even where the contract asks for RSA
// (Talos 1.7 and later): generating an RSA key takes most of a second of
// CPU, and no check reads the key (machinery's generate copies it into
// cluster.serviceAccount.key as it is; validation does not parse it).
// Everything else is as NewSecrets makes it: machinery's bundle populate
// differs between contracts above 1.6 only in that key
// (config/generate/secrets/bundle.go; TestCheckSecretsShapedLikeReal holds
// that).
func NewCheckSecrets(talosVersion string, now time.Time) (*secrets.Bundle, error) {
	contract, err := VersionContract(talosVersion)
	if err != nil {
		return nil, err
	}
	if contract.UseRSAServiceAccountKey() {
		contract = config.TalosVersion1_6
	}
	bundle, err := secrets.NewBundle(secrets.NewFixedClock(now), contract)
	if err != nil {
		return nil, fmt.Errorf("generating a secrets bundle for checks: %w", err)
	}
	return bundle, nil
}
