"""Runs one step (up, preview or destroy) of an inline Pulumi program through the Python
Automation API, the way tests/e2e drives the Python example: the program is a function of
an importable module, the CLI and the provider come from the paths the Go test gives, and
the result goes to a JSON file (never to the console, because stack outputs hold secrets in
plain text there).

Usage: python runner.py <spec.json>
"""

import importlib
import json
import os
import runpy
import sys
from typing import Any, Callable, Dict

from pulumi import automation as auto


def main(spec_file: str) -> None:
    with open(spec_file, encoding="utf-8") as f:
        spec: Dict[str, Any] = json.load(f)

    sys.path.insert(0, spec["programDir"])
    program: Callable[[], None]
    if spec["programExport"]:
        module = importlib.import_module(spec["programModule"])
        function = getattr(module, spec["programExport"], None)
        if not callable(function):
            raise SystemExit(f"{spec['programModule']} has no function {spec['programExport']}")
        program = function
    else:
        # Run a file as Pulumi runs a project's __main__.py.
        path = os.path.join(spec["programDir"], spec["programModule"])

        def program() -> None:
            runpy.run_path(path, run_name="__main__")

    # ProjectSettings has no plugins field: write Pulumi.yaml ourselves (JSON is YAML), and
    # LocalWorkspace reads it from work_dir.
    project = {
        "name": spec["projectName"],
        "runtime": "python",
        "plugins": {"providers": [{"name": "proxmoxtalos", "path": spec["providerDir"]}]},
    }
    with open(os.path.join(spec["workDir"], "Pulumi.yaml"), "w", encoding="utf-8") as f:
        json.dump(project, f, indent=2)

    stack = auto.create_or_select_stack(
        stack_name=spec["stackName"],
        project_name=spec["projectName"],
        program=program,
        opts=auto.LocalWorkspaceOptions(
            work_dir=spec["workDir"],
            pulumi_home=spec["pulumiHome"],
            pulumi_command=auto.PulumiCommand(root=spec["cliRoot"], skip_version_check=True),
            env_vars=spec["envVars"],
            secrets_provider="passphrase",
        ),
    )
    stack.set_all_config(
        {k: auto.ConfigValue(value=v["value"], secret=v["secret"]) for k, v in spec["config"].items()}
    )

    # Engine output (which masks secrets) goes to stderr for the test log.
    def on_output(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    result: Dict[str, Any] = {"step": spec["step"]}
    step = spec["step"]
    if step == "up":
        up = stack.up(on_output=on_output)
        result["resourceChanges"] = up.summary.resource_changes
        result["outputs"] = {k: {"value": v.value, "secret": v.secret} for k, v in up.outputs.items()}
    elif step == "preview":
        preview = stack.preview(on_output=on_output)
        result["changeSummary"] = preview.change_summary
    elif step == "destroy":
        destroy = stack.destroy(on_output=on_output)
        result["resourceChanges"] = destroy.summary.resource_changes
    else:
        raise SystemExit(f"unknown step {step}: use up, preview or destroy")

    with open(spec["resultFile"], "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1])
