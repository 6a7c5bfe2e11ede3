package talos

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	mtype "github.com/siderolabs/talos/pkg/machinery/config/machine"
	"github.com/siderolabs/talos/pkg/machinery/config/types/v1alpha1"
)

// generateConfiguration answers GenerateConfiguration as the node's Talos
// does (siderolabs/talos internal/pkg/configuration/configuration.go):
// the request's options over machinery's generator, with the secrets of
// the active config (a fresh bundle in maintenance mode), and the version
// contract of that release: v1.12.x generates with the 1.11 contract
// (TalosVersion1_11, for secrets and config alike), v1.10 and v1.11 with
// their own (TalosVersionCurrent); releases newer than v1.12 are assumed to
// keep the 1.11 contract. The talosconfig's endpoint is the control plane
// endpoint's host.
func generateConfiguration(in *machine.GenerateConfigurationRequest, running string, active config.Provider) (*machine.GenerateConfigurationResponse, error) {
	if in.MachineConfig == nil || in.ClusterConfig == nil || in.ClusterConfig.ControlPlane == nil {
		return nil, errors.New("invalid generate request")
	}

	if in.ConfigVersion != "v1alpha1" {
		return nil, fmt.Errorf("unsupported config version %s", in.ConfigVersion)
	}

	contract, err := config.ParseContractFromVersion(running)
	if err != nil {
		return nil, err
	}

	if contract.Greater(config.TalosVersion1_11) {
		contract = config.TalosVersion1_11
	}

	options := generateOptions(in)

	clock := secrets.NewFixedClock(time.Now())
	if in.OverrideTime != nil {
		clock = secrets.NewFixedClock(in.OverrideTime.AsTime())
	}

	var bundle *secrets.Bundle

	if active != nil {
		bundle = secrets.NewBundleFromConfig(clock, active)
	} else if bundle, err = secrets.NewBundle(clock, contract); err != nil {
		return nil, err
	}

	options = append(options, generate.WithSecretsBundle(bundle), generate.WithVersionContract(contract))

	input, err := generate.NewInput(in.ClusterConfig.Name, in.ClusterConfig.ControlPlane.Endpoint, in.MachineConfig.KubernetesVersion, options...)
	if err != nil {
		return nil, err
	}

	cfg, err := input.Config(mtype.Type(in.MachineConfig.Type))
	if err != nil {
		return nil, err
	}

	cfgBytes, err := cfg.Bytes()
	if err != nil {
		return nil, err
	}

	talosconfig, err := input.Talosconfig()
	if err != nil {
		return nil, err
	}

	endpoint, err := url.Parse(in.ClusterConfig.ControlPlane.Endpoint)
	if err != nil {
		return nil, err
	}

	talosconfig.Contexts[talosconfig.Context].Endpoints = []string{endpoint.Hostname()}

	talosconfigBytes, err := talosconfig.Bytes()
	if err != nil {
		return nil, err
	}

	return &machine.GenerateConfigurationResponse{Messages: []*machine.GenerateConfiguration{{
		Data:        [][]byte{cfgBytes},
		Talosconfig: talosconfigBytes,
	}}}, nil
}

// generateOptions maps the request's network, install and cluster network
// settings onto generator options, field for field as Talos does.
func generateOptions(in *machine.GenerateConfigurationRequest) []generate.Option {
	var options []generate.Option

	if nc := in.MachineConfig.NetworkConfig; nc != nil {
		network := &v1alpha1.NetworkConfig{NetworkHostname: nc.Hostname}

		for _, dev := range nc.Interfaces {
			iface := &v1alpha1.Device{
				DeviceInterface: dev.Interface,
				DeviceMTU:       int(dev.Mtu),
				DeviceCIDR:      dev.Cidr,
				DeviceDHCP:      &dev.Dhcp,
				DeviceIgnore:    &dev.Ignore,
			}

			for _, r := range dev.Routes {
				iface.DeviceRoutes = append(iface.DeviceRoutes, &v1alpha1.Route{RouteNetwork: r.Network, RouteGateway: r.Gateway, RouteMetric: r.Metric})
			}

			if dev.DhcpOptions != nil {
				iface.DeviceDHCPOptions = &v1alpha1.DHCPOptions{DHCPRouteMetric: dev.DhcpOptions.RouteMetric}
			}

			network.NetworkInterfaces = append(network.NetworkInterfaces, iface)
		}

		options = append(options, generate.WithNetworkOptions(v1alpha1.WithNetworkConfig(network)))
	}

	if ic := in.MachineConfig.InstallConfig; ic != nil {
		if ic.InstallDisk != "" {
			options = append(options, generate.WithInstallDisk(ic.InstallDisk))
		}

		if ic.InstallImage != "" {
			options = append(options, generate.WithInstallImage(ic.InstallImage))
		}
	}

	if cn := in.ClusterConfig.ClusterNetwork; cn != nil {
		if cn.DnsDomain != "" {
			options = append(options, generate.WithDNSDomain(cn.DnsDomain))
		}

		if cn.CniConfig != nil {
			options = append(options, generate.WithClusterCNIConfig(&v1alpha1.CNIConfig{CNIName: cn.CniConfig.Name, CNIUrls: cn.CniConfig.Urls}))
		}
	}

	return append(options, generate.WithAllowSchedulingOnControlPlanes(in.ClusterConfig.AllowSchedulingOnControlPlanes))
}
