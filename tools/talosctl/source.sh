#!/usr/bin/env bash
# Usage: source.sh VERSION DIR
#
# Lays out the source of github.com/siderolabs/talos@VERSION in DIR (an ignored folder under
# .tools; go.mod replaces the module with it), from Go's module cache, with one build fix:
#
# talos v1.14.1 requires github.com/jsimonetti/rtnetlink/v2 at a commit the module proxy
# reachable here does not serve (nor any commit with RouteVia); go.mod replaces it with v2.2.0,
# which lacks RouteVia. One function of talosctl uses it: fabricInstallRoute in
# cmd/talosctl/cmd/mgmt/bgp_launch_linux.go, the BGP test fabric of `talosctl cluster create`,
# for IPv4 routes through IPv6 next hops. Those two assignments become an error return; every
# other file is built as released. The script fails if the file no longer has exactly those
# two lines: drop the fix (and the rtnetlink replace) when the pin moves past it.
set -euo pipefail

version=$1
dst=$2

# Outside this module: its go.mod points talos at DIR, which may not exist yet.
src=$(cd / && GOFLAGS= go mod download -json "github.com/siderolabs/talos@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [ -z "$src" ] || [ ! -d "$src" ]; then
	echo "source.sh: cannot download github.com/siderolabs/talos@$version into the module cache" >&2
	exit 1
fi

rm -rf "$dst"
mkdir -p "$(dirname "$dst")"
cp -R "$src" "$dst"
chmod -R u+w "$dst"

file="$dst/cmd/talosctl/cmd/mgmt/bgp_launch_linux.go"
sed -i -E 's/^([[:space:]]*)(attrs|hop)\.Via = &rtnetlink\.RouteVia\{.*\}$/\1return rtnetlink.RouteMessage{}, fmt.Errorf("cross-family next hops (RTA_VIA) are not supported by this talosctl build")/' "$file"

if [ "$(grep -c 'not supported by this talosctl build' "$file")" != 2 ]; then
	echo "source.sh: $file no longer has the two RouteVia assignments to fix: update or drop the fix in tools/talosctl/source.sh" >&2
	exit 1
fi
