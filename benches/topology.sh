#!/usr/bin/env bash
# benches/topology.sh - how long `--topology` takes to read and parse an ibnetdiscover file of a
# 10,000-node and of a 100,000-node fabric (issue #44: 0.4 takes files up to 256 MiB), and the
# peak memory it needs. The files are three-tier fat trees from benches/topology-gen.py; the
# reader is the one `fabric --topology` and `mesh --topology` use (examples/topology_parse.rs).
#
# Usage: benches/topology.sh [--pods P]...   (default: 9 and 91 pods: 10,816 and 100,032 nodes)
# Prints one line per file, last:
#   bytes=B nodes=N links=L leaves=N read_parse_s=S leaves_s=S peak_rss_mb=M max_rss_mb=M wall_s=S
# (peak_rss_mb from the process itself, max_rss_mb and wall_s from /usr/bin/time -v when present).
set -euo pipefail
cd "$(dirname "$0")/.."
pods=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --pods) pods+=("$2"); shift 2 ;;
        *) echo "usage: $0 [--pods P]..." >&2; exit 2 ;;
    esac
done
[[ ${#pods[@]} -gt 0 ]] || pods=(9 91)
cargo build --release --example topology_parse >&2
bin=target/release/examples/topology_parse
work=$(mktemp -d /var/tmp/fabcheck-topology.XXXXXX)
trap 'rm -rf "$work"' EXIT
for p in "${pods[@]}"; do
    file=$work/fat-tree-$p.net
    python3 benches/topology-gen.py --pods "$p" >"$file"
    if [[ -x /usr/bin/time ]]; then
        /usr/bin/time -v "$bin" "$file" 60 >"$work/out" 2>"$work/time"
        max=$(awk -F': ' '/Maximum resident set size/ { printf "%.1f", $2 / 1024 }' "$work/time")
        wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; printf "%.2f", s }' "$work/time")
        echo "$(cat "$work/out") max_rss_mb=$max wall_s=$wall"
    else
        "$bin" "$file" 60
    fi
done
