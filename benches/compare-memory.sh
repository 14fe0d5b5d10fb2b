#!/usr/bin/env bash
# benches/compare-memory.sh - the memory and time `fabcheck compare` takes on two large mesh
# documents (issue #46 item 5: 0.3 took 8.8 GB and 36 s for a 230 MB document).
#
# Generates two mesh documents of N endpoints, every pair once, each pair a write_bw and a
# send_lat result as `mesh --json` writes them (about 430 bytes a pair; the second document's
# bandwidth halved, so every pair regresses), then runs `fabcheck compare` on them under
# /usr/bin/time -v, with --json and with the table, and prints one line per run:
#   mode=json doc_bytes=... pairs=... peak_rss_mb=... cpu_s=... wall_s=... exit=1
# A benchmark, not a test: exit 0 whatever the figures; 2 on bad usage or a missing tool.
set -euo pipefail

PROG=compare-memory.sh
endpoints=1040
fabcheck=""
keep=""

usage() {
	cat <<'EOF'
Usage: benches/compare-memory.sh [--endpoints N] [--fabcheck PATH] [--keep DIR]

  --endpoints N    endpoints of each mesh document (default 1040: 540,280 pairs, about 230 MB)
  --fabcheck PATH  the fabcheck to measure (default target/release/fabcheck, else PATH's)
  --keep DIR       write the documents to DIR and keep them (default: a temporary directory);
                   documents already there for the same N are used again
  -h, --help       this text

Example (the issue's size, this build against 0.3's):
  cargo build --release --bin fabcheck && benches/compare-memory.sh
  benches/compare-memory.sh --fabcheck /path/to/fabcheck-0.3 --keep /tmp/docs
EOF
}

die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case $1 in
	--endpoints) endpoints=${2:?}; shift 2 ;;
	--fabcheck) fabcheck=${2:?}; shift 2 ;;
	--keep) keep=${2:?}; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
if ! [[ $endpoints =~ ^[0-9]+$ ]] || [ "$endpoints" -lt 2 ]; then
	die "--endpoints takes a number of at least 2"
fi
if [ -z "$fabcheck" ]; then
	here=$(cd "$(dirname "$0")/.." && pwd)
	if [ -x "$here/target/release/fabcheck" ]; then fabcheck=$here/target/release/fabcheck; else fabcheck=$(command -v fabcheck || true); fi
fi
[ -x "$fabcheck" ] || die "no fabcheck to run (build it: cargo build --release --bin fabcheck, or give --fabcheck)"
[ -x /usr/bin/time ] || die "/usr/bin/time is needed (Debian: apt-get install time)"
command -v python3 >/dev/null || die "python3 is needed to write the documents"

if [ -n "$keep" ]; then
	mkdir -p "$keep"
	dir=$keep
else
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
fi

# The documents, as tests/integration/compare.rs's large_mesh_doc writes them.
if [ "$(cat "$dir/endpoints" 2>/dev/null)" != "$endpoints" ]; then
python3 - "$endpoints" "$dir" <<'PY'
import sys
n, d = int(sys.argv[1]), sys.argv[2]
name = lambda i: "tcp://10.%d.%d.%d:18515/mlx5_0" % (i // 65536, i // 256 % 256, i % 256)
for file, scale in (("old.json", 1.0), ("new.json", 0.5)):
    with open("%s/%s" % (d, file), "w", buffering=1 << 20) as out:
        out.write('{"schema":"fabcheck.mesh.v1","time":"2026-12-01T00:00:00Z","host":"ctl","verdict":"pass","endpoints":[')
        out.write(",".join('"%s"' % name(i) for i in range(n)))
        out.write('],"hosts":{')
        out.write(",".join('"%s":"n%05d"' % (name(i), i) for i in range(n)))
        out.write('},"pairs":[')
        first = True
        for a in range(n):
            for b in range(a + 1, n):
                bw = scale * (90.0 + ((a * 7 + b * 13) % 100) / 10.0)
                lat = 1.5 + ((a + b) % 10) / 100.0
                out.write('%s{"a":"%s","b":"%s","verdict":"pass","results":[{"test":"write_bw","direction":"a->b","size":65536,"iterations":5000,"qps":1,"bw_gbps":%.3f,"peak_gbps":%.3f,"msg_rate_mpps":%.6f},{"test":"send_lat","direction":"a->b","size":2,"iterations":1000,"qps":1,"lat_us":{"min":%.3f,"p50":%.3f,"p90":%.3f,"p99":%.3f,"p999":%.3f,"max":%.3f,"mean":%.3f,"stdev":0.021}}]}'
                          % ("" if first else ",", name(a), name(b), bw, bw * 1.01, bw / 0.524288 / 1000.0, lat - 0.1, lat, lat + 0.1, lat + 0.3, lat + 0.9, lat + 4.0, lat))
                first = False
        out.write('],"suspects":[]}')
PY
echo "$endpoints" >"$dir/endpoints"
fi

bytes=$(stat -c %s "$dir/old.json")
pairs=$((endpoints * (endpoints - 1) / 2))
for mode in json human; do
	flag=()
	[ "$mode" = json ] && flag=(--json)
	set +e
	/usr/bin/time -v "$fabcheck" compare "${flag[@]}" "$dir/old.json" "$dir/new.json" >/dev/null 2>"$dir/time.$mode"
	code=$?
	set -e
	rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$dir/time.$mode")
	wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$dir/time.$mode")
	cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.1f", s}' "$dir/time.$mode")
	# h:mm:ss or m:ss.ss -> seconds
	secs=$(awk -v t="$wall" 'BEGIN { n = split(t, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; printf "%.1f", s }')
	echo "mode=$mode doc_bytes=$bytes pairs=$pairs peak_rss_mb=$((rss_kb / 1024)) cpu_s=$cpu wall_s=$secs exit=$code"
done
