// Type-checked with `tsc --strict` against the packed Node.js SDK installed into an empty
// project (make nodejs-sdk-check): it must pass, and ts_typed_misuse.ts must fail.
import * as proxmoxtalos from "@proxmoxtalos/proxmoxtalos";

export async function schematic(version: string): Promise<string> {
    const result = await proxmoxtalos.talos.getImageFactory({
        talosVersion: version,
        extensions: ["siderolabs/qemu-guest-agent"],
    });
    const id: string = result.schematicId;
    return id;
}

export const providerClass: typeof proxmoxtalos.Provider = proxmoxtalos.Provider;
