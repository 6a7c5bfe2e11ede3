// Must FAIL `tsc --strict`: a number where the SDK declares a string, and a result field
// that does not exist. If this compiles, the SDK's types have degraded to any.
import * as proxmoxtalos from "@proxmoxtalos/proxmoxtalos";

export async function misuse(): Promise<string> {
    const result = await proxmoxtalos.talos.getImageFactory({ talosVersion: 112 });
    return result.noSuchField;
}
