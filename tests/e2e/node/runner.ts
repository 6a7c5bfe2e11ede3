// Runs one step (up, preview or destroy) of an inline Pulumi program through the Node.js
// Automation API, the way tests/e2e drives the TypeScript example: the program is an
// exported function of a compiled module, the CLI and the provider come from the paths the
// Go test gives, and the result goes to a JSON file (never to the console, because stack
// outputs hold secrets in plain text there).
//
// Usage: node runner.js <spec.json>
import * as fs from "fs";
import { LocalWorkspace, PulumiCommand, type ConfigMap, type OutputMap, type PulumiFn } from "@pulumi/pulumi/automation";

interface Spec {
    step: "up" | "preview" | "destroy";
    projectName: string;
    stackName: string;
    workDir: string;
    pulumiHome: string;
    cliRoot: string; // folder whose bin/pulumi is the CLI
    providerDir: string; // folder holding pulumi-resource-proxmoxtalos
    envVars: Record<string, string>;
    config: ConfigMap;
    programModule: string; // absolute path of the compiled module
    programExport: string; // name of the exported program function; "" when the module is the function
    resultFile: string;
}

interface Result {
    step: string;
    // up and destroy: resource operations by kind (create, same, delete...)
    resourceChanges?: Record<string, number>;
    // preview: the same, as the engine summarises it
    changeSummary?: Record<string, number>;
    outputs?: OutputMap;
}

async function main(): Promise<void> {
    const spec = JSON.parse(fs.readFileSync(process.argv[2], "utf8")) as Spec;
    const mod = require(spec.programModule) as unknown;
    const program = spec.programExport === "" ? mod : (mod as Record<string, unknown>)[spec.programExport];
    if (typeof program !== "function") {
        throw new Error(`${spec.programModule} exports no function ${spec.programExport || "(module.exports)"}`);
    }

    // The Node.js ProjectSettings type has no plugins field: write Pulumi.yaml ourselves
    // (JSON is YAML), and LocalWorkspace reads it from workDir.
    const project = {
        name: spec.projectName,
        runtime: "nodejs",
        plugins: { providers: [{ name: "proxmoxtalos", path: spec.providerDir }] },
    };
    fs.writeFileSync(`${spec.workDir}/Pulumi.yaml`, JSON.stringify(project, null, 2));

    const pulumiCommand = await PulumiCommand.get({ root: spec.cliRoot, skipVersionCheck: true });
    const stack = await LocalWorkspace.createOrSelectStack(
        { stackName: spec.stackName, projectName: spec.projectName, program: program as PulumiFn },
        {
            workDir: spec.workDir,
            pulumiHome: spec.pulumiHome,
            pulumiCommand,
            envVars: spec.envVars,
            secretsProvider: "passphrase",
        },
    );
    await stack.setAllConfig(spec.config);

    // Engine output (which masks secrets) goes to stderr for the test log.
    const onOutput = (line: string) => process.stderr.write(line);
    const result: Result = { step: spec.step };
    switch (spec.step) {
        case "up": {
            const up = await stack.up({ onOutput });
            result.resourceChanges = up.summary.resourceChanges as Record<string, number>;
            result.outputs = up.outputs;
            break;
        }
        case "preview": {
            const preview = await stack.preview({ onOutput });
            result.changeSummary = preview.changeSummary as Record<string, number>;
            break;
        }
        case "destroy": {
            const destroy = await stack.destroy({ onOutput });
            result.resourceChanges = destroy.summary.resourceChanges as Record<string, number>;
            break;
        }
        default:
            throw new Error(`unknown step ${String(spec.step)}: use up, preview or destroy`);
    }
    fs.writeFileSync(spec.resultFile, JSON.stringify(result));
}

main().catch((err: unknown) => {
    process.stderr.write(`runner: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    process.exit(1);
});
