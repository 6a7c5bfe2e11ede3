package talos

import "github.com/pulumi/pulumi-go-provider/infer"

// Architecture is the CPU architecture of Talos images.
type Architecture string

// The architectures the Image Factory builds Talos images for.
const (
	ArchitectureAmd64 Architecture = "amd64"
	ArchitectureArm64 Architecture = "arm64"
)

// Values lists the architectures.
func (Architecture) Values() []infer.EnumValue[Architecture] {
	return []infer.EnumValue[Architecture]{
		{Name: "Amd64", Value: ArchitectureAmd64, Description: "64-bit x86 (Intel, AMD): the usual Proxmox host."},
		{Name: "Arm64", Value: ArchitectureArm64, Description: "64-bit ARM (for example Proxmox on Ampere or Raspberry Pi hosts)."},
	}
}

// Annotate documents the type.
func (a *Architecture) Annotate(an infer.Annotator) {
	an.Describe(a, "CPU architecture of the Talos images (ISO, disk images); it must match the Proxmox host's CPU.")
}

// archOrDefault is the architecture's value, amd64 when unset (state written before the
// default existed has none).
func archOrDefault(a *Architecture) string {
	if a == nil || *a == "" {
		return string(ArchitectureAmd64)
	}
	return string(*a)
}
