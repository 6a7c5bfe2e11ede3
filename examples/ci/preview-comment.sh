#!/usr/bin/env bash
# Turns the output of `pulumi preview --diff` (stdout and stderr) into a pull-request comment
# (markdown on stdout): each TalosCluster's one-line summary of what the update does on top
# (the component prints it as a diagnostic, "cluster <name>: <summary>"), then the resource
# counts, then the whole diff folded away.
#   usage: preview-comment.sh <stack> <preview-output-file> [<exit code of pulumi preview>]
set -euo pipefail
stack=$1 file=$2 code=${3:-0}

# `pulumi preview --diff` prints diagnostics on stderr, unindented; the default display
# indents them under "Diagnostics:". The component's summary starts "cluster <name>: ".
summaries=$(grep -E '^( {4})?cluster [^ :]+: ' "$file" | sed -E 's/^ +//' | awk '!seen[$0]++' || true)
# An offline preview (PROXMOXTALOS_OFFLINE_PREVIEW) warns once per check it skipped:
# "offline preview (...): not checked: <what>".
skipped=$(grep -oE 'offline preview \(.*\): not checked: .*' "$file" | sed -E 's/^.*: not checked: //' | awk '!seen[$0]++' || true)
counts=$(awk '/^Resources:/ { on = 1; next } on && /^ +[^ ]/ { sub(/^ +/, ""); print; next } on { exit }' "$file")

echo "### \`pulumi preview\` of stack \`$stack\`"
echo
if [ "$code" != 0 ]; then
  echo "**The preview failed (exit $code)**: see the output below."
  echo
fi
if [ -n "$summaries" ]; then
  while IFS= read -r line; do echo "- **$line**"; done <<<"$summaries"
  echo
fi
if [ -n "$skipped" ]; then
  echo "**Offline preview**: planned from the stack's state without contacting Proxmox VE or the nodes. Not checked:"
  while IFS= read -r line; do echo "- $line"; done <<<"$skipped"
  echo
fi
if [ -n "$counts" ]; then
  echo "Resources: $(paste -sd, - <<<"$counts" | sed 's/,/, /g')"
  echo
fi
echo "<details><summary>pulumi preview --diff</summary>"
echo
echo '```diff'
# GitHub comments hold at most 65536 characters: keep the head of a very long diff.
head -c 60000 "$file"
echo
echo '```'
echo "</details>"
