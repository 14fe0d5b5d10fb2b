#!/usr/bin/env bash
# Builds target/dist/: the portable binary (glibc 2.28 and later: RHEL 8, Ubuntu 20.04, Debian 11)
# as fabcheck-VERSION-x86_64-linux-gnu.tar.gz, a .deb and an .rpm, each with the binary, the man
# pages, bash/zsh/fish completions, the docs and the contrib files (NHC, Slurm, Prometheus, Kubernetes), plus
# the binary's separate debug file and SHA256SUMS. Then verifies its own output: every package
# unpacked (the .deb also installed into and removed from a scratch dpkg root) runs, renders its
# man page and passes a check of a captured sysfs tree; the binary needs no newer glibc than 2.28,
# links no RDMA library (they are loaded at run time) and starts in a chroot holding nothing but
# it and its libc.
#
# Installs what it needs itself (apt: binutils rpm rpm2cpio cpio man-db groff-base python3-venv
# lintian rpmlint;
# zig and cargo-zigbuild from PyPI into a venv under target/dist-tools/); quiet when they are
# there. Usage: dist/package.sh. Environment:
#   FABCHECK_MAINTAINER  the packages' Maintainer/Packager, "Name <address>" (else git's user.name
#                        and user.email; a run with neither fails and says what to set)
#   FABCHECK_HOMEPAGE    the packages' Homepage/URL (optional)
#   CARGO_TARGET_DIR     where cargo builds (default ./target); target/dist and the tools go there
#   SOURCE_DATE_EPOCH    the build date (default: the commit's): one commit and one epoch give the
#                        same binary bytes from any directory (paths are remapped)
#   FABCHECK_REPRO_CHECK=1  also rebuild from a copy of the tree in another directory and require
#                        byte-identical binaries (the packaging tier of tests/run-all.sh sets it)
set -euo pipefail
cd "$(dirname "$0")/.."
# The physical path: the remapped prefixes below must be the ones cargo hands rustc, whatever
# symlink the tree was reached through.
root=$(pwd -P)
start=$(date +%s)

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
[[ -n $version ]] || { echo "package: no version in Cargo.toml" >&2; exit 1; }
rust_triple=x86_64-unknown-linux-gnu
min_glibc=2.28
name=fabcheck-$version-x86_64-linux-gnu
target_dir=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$target_dir"
target_dir=$(cd "$target_dir" && pwd)
dist=$target_dir/dist
tools=$target_dir/dist-tools
homepage=${FABCHECK_HOMEPAGE:-}
summary="RDMA fabric validator: inventory, bring-up checklist, latency and bandwidth"
max_bytes=$((10 * 1000 * 1000))
healthy_fixture=$root/tests/fixtures/hdr-ib-healthy
# Libraries the binary must load at run time, never link: a node without rdma-core still runs it.
rdma_libs='libibverbs|librdmacm|libibumad|libibmad|libibnetdisc'

say() { echo "package: $*" >&2; }
die() { echo "package: FAILED: $*" >&2; exit 1; }
# Checks of the output collect their failures, so one run reports all of them.
failures=()
fail() {
	echo "package: FAIL: $*" >&2
	failures+=("$*")
}

# The Maintainer: configuration, not a placeholder (lintian rejects bogus addresses).
maintainer=${FABCHECK_MAINTAINER:-}
if [[ -z $maintainer ]]; then
	git_name=$(git config user.name 2>/dev/null || true)
	git_mail=$(git config user.email 2>/dev/null || true)
	[[ -n $git_name && -n $git_mail ]] && maintainer="$git_name <$git_mail>"
fi
[[ -n $maintainer ]] || die "no maintainer: set FABCHECK_MAINTAINER='Your Name <you@your.domain>' (or git's user.name and user.email)"
maintainer_form='^[^<>]+ <[^@<> ]+@[^@<> ]+\.[^@<> ]+>$'
[[ $maintainer =~ $maintainer_form ]] ||
	die "FABCHECK_MAINTAINER='$maintainer' is not 'Name <user@host.domain>'"
# Reproducible: the build date is the commit's unless given, and the paths of this checkout, the
# target directory and cargo's registry are remapped, so no build directory leaks into the binary.
# A tree that is not a checkout of its own (tests/run-all.sh packages a copy) is given its commit.
in_git=0
[[ $(git -C "$root" rev-parse --show-toplevel 2>/dev/null) == "$(cd "$root" && pwd -P)" ]] && in_git=1
commit=${FABCHECK_GIT_COMMIT:-}
if [[ -z $commit ]]; then
	commit=unknown
	((in_git)) && commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
fi
if [[ -z ${SOURCE_DATE_EPOCH:-} ]]; then
	SOURCE_DATE_EPOCH=$(date +%s)
	((in_git)) && SOURCE_DATE_EPOCH=$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH
export FABCHECK_GIT_COMMIT=$commit
cargo_home=${CARGO_HOME:-$HOME/.cargo}

# --- tools ------------------------------------------------------------------------------------
apt_needs=(binutils rpm rpm2cpio cpio man-db groff-base python3-venv lintian rpmlint)
missing=()
for p in "${apt_needs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
	sudo=""
	if [[ $(id -u) -ne 0 ]]; then
		command -v sudo >/dev/null || die "need root (or sudo) to install: ${missing[*]}"
		sudo=sudo
	fi
	say "installing ${missing[*]}"
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# zig (the linker that targets an old glibc) and cargo-zigbuild, pinned, in a venv of their own.
venv=$tools/venv
zig_pins=(ziglang==0.17.1 cargo-zigbuild==0.24.1)
if ! "$venv/bin/python" -c 'import ziglang' 2>/dev/null || [[ ! -x $venv/bin/cargo-zigbuild ]]; then
	say "installing ${zig_pins[*]} into $venv"
	python3 -m venv --clear "$venv"
	"$venv/bin/pip" install -q --disable-pip-version-check "${zig_pins[@]}"
fi
zig=$("$venv/bin/python" -c 'import ziglang, os; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
[[ -x $zig ]] || die "zig not found in $venv"

# --- build --------------------------------------------------------------------------------------
# zig writes its library path relative to the current directory when it lies below it, and the
# build scripts (bindgen) run elsewhere: run from a directory beside the venv, never above it.
# bindgen sees zig's glibc 2.28 headers (-nostdinc); /usr/include stays last for rdma-core's.
mkdir -p "$tools/run"
# rustc runs the linker in the workspace root, and zig compiles the libunwind it links with that
# directory in its debug info (relative paths when its own library lies below it): the link runs
# in one fixed directory instead, whatever tree is built (every path rustc passes is absolute).
link_wrapper=$tools/link-in-fixed-dir.sh
cat >"$link_wrapper" <<'EOF'
#!/bin/sh
# dist/package.sh's linker: cargo-zigbuild's, run from a fixed directory (reproducible builds).
cd "$FABCHECK_LINK_DIR" || exit 1
exec "$CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER" "$@"
EOF
chmod 0755 "$link_wrapper"
# build SOURCE_ROOT TARGET_DIR: the release binary of the tree at SOURCE_ROOT, built in TARGET_DIR
# (at TARGET_DIR/$rust_triple/release/fabcheck).
build() {
	local src=$1 into=$2
	(
		cd "$tools/run"
		export PATH="$venv/bin:$PATH" CARGO_ZIGBUILD_ZIG_PATH="$zig" CARGO_TARGET_DIR="$into"
		# With --target, RUSTFLAGS reach only the target's crates, never build scripts. Where two
		# prefixes match a path rustc applies the last: the longest goes last (the copy of the tree
		# lies inside the target directory, the target directory inside the tree).
		export FABCHECK_LINK_DIR="$tools/run"
		# CARGO_ENCODED_RUSTFLAGS (flags apart by 0x1f, not by spaces): a checkout under a
		# directory whose name has a space (`/tmp/a b/fabcheck`) stays one flag.
		local sep=$'\x1f' flags from to
		flags="-C${sep}linker=$link_wrapper${sep}-C${sep}link-arg=-Wl,--build-id=sha1"
		while IFS=$'\t' read -r _ from to; do
			flags+="${sep}--remap-path-prefix=$from=$to"
		done < <(printf '%s\t%s\n' "$src" "/usr/src/fabcheck-$version" "$into" "/usr/src/fabcheck-$version/target" \
			"$cargo_home" "/usr/src/cargo" | awk -F'\t' '{ print length($1) "\t" $0 }' | sort -n)
		unset RUSTFLAGS
		export CARGO_ENCODED_RUSTFLAGS=$flags
		# bindgen reads the hyphenated name first (not a shell variable name: set through env).
		env "BINDGEN_EXTRA_CLANG_ARGS_$rust_triple=-idirafter /usr/include" "BINDGEN_EXTRA_CLANG_ARGS_${rust_triple//-/_}=-idirafter /usr/include" \
			nice cargo-zigbuild zigbuild --manifest-path "$src/Cargo.toml" --locked --release --target "$rust_triple.$min_glibc" --bin fabcheck
	)
}
say "building the release binary for glibc $min_glibc (cargo zigbuild, SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH)"
build "$root" "$target_dir"
built=$target_dir/$rust_triple/release/fabcheck
[[ -x $built ]] || die "the build left no $built"

rm -rf "$dist"
mkdir -p "$dist"
work=$(mktemp -d "$target_dir/dist-work.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --- reproducible: the same bytes from a copy of the tree in another directory ---------------------
first=$work/fabcheck.first
cp "$built" "$first"
if [[ ${FABCHECK_REPRO_CHECK:-0} == 1 ]]; then
	# A second clean build: another directory, its own target directory, nothing shared but the
	# registry and the toolchain.
	repro=$work/repro
	copy=$repro/fabcheck-copy
	mkdir -p "$copy"
	# The files git would build from (tracked, and untracked but not ignored), without .git
	# (tar keeps the fixtures' symlinks as links; a file deleted but not yet staged is left out).
	# A tree that is no checkout of its own is copied whole but for its target directory.
	if ((in_git)); then
		(cd "$root" && git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
			[[ -e $f || -L $f ]] && printf '%s\0' "$f"
		done | tar --null -T - -cf -) | tar -C "$copy" -xf - || die "cannot copy the tree to $copy"
	else
		tar -C "$root" --exclude=./target -cf - . | tar -C "$copy" -xf - || die "cannot copy the tree to $copy"
	fi
	say "reproducibility: a clean build again from $copy"
	build "$copy" "$repro/target"
	if cmp -s "$first" "$repro/target/$rust_triple/release/fabcheck"; then
		say "reproducibility: both builds are byte-identical ($(sha256sum "$first" | cut -c1-16)...)"
	else
		fail "reproducibility: the build from $copy differs from the build from $root (SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH)"
		cp "$first" "$target_dir/fabcheck.repro-first" && cp "$repro/target/$rust_triple/release/fabcheck" "$target_dir/fabcheck.repro-second" &&
			say "the two binaries are kept as $target_dir/fabcheck.repro-{first,second} (diffoscope compares them)"
	fi
	rm -rf "$repro"
fi
built=$first

# --- the binary: debug info apart, size, glibc, no RDMA library linked ----------------------------
# Stripped as Debian's dh_strip does (symbols, .comment); the debug info ships beside the tarball
# and in the fabcheck-dbgsym package, found by build id.
bin=$work/fabcheck
debug=$dist/$name.debug
objcopy --only-keep-debug --compress-debug-sections=zlib "$built" "$debug"
objcopy --strip-unneeded --remove-section=.comment --add-gnu-debuglink="$debug" "$built" "$bin"
chmod 0755 "$bin"
chmod 0644 "$debug"
build_id=$(readelf -n "$bin" | sed -n 's/^ *Build ID: *\([0-9a-f]*\)$/\1/p' | head -n 1)
[[ ${#build_id} -ge 16 ]] || die "the binary has no build id (readelf -n): the link flag --build-id=sha1 did not reach the linker"
size=$(stat -c %s "$bin")
say "binary: $size bytes (debug info in $(basename "$debug"), $(stat -c %s "$debug") bytes)"
((size < max_bytes)) || fail "the binary is $size bytes, over $max_bytes"
glibc_max=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -Vu | tail -n 1)
say "highest glibc symbol version: GLIBC_$glibc_max (at most $min_glibc allowed)"
[[ $(printf '%s\n%s\n' "$glibc_max" "$min_glibc" | sort -V | tail -n 1) == "$min_glibc" ]] ||
	fail "the binary needs GLIBC_$glibc_max, newer than $min_glibc"
needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
say "linked: $needed"
if grep -qE "($rdma_libs)" <<<"$needed"; then
	fail "the binary links an RDMA library ($needed): libibverbs, librdmacm and the MAD libraries must be loaded at run time (dlopen)"
fi
objdump -h "$bin" | grep -qE '\.debug_info|\.symtab' && fail "debug info or a symbol table left in the shipped binary"
readelf -p .gnu_debuglink "$bin" 2>/dev/null | grep -q "$(basename "$debug")" || fail "no .gnu_debuglink to $(basename "$debug")"

# --- the tree every package holds -----------------------------------------------------------------
# layout PREFIX ZSH_DIR INSTALLED: PREFIX/bin/fabcheck, PREFIX/share/{man,doc,completions,fabcheck},
# PREFIX/lib/systemd/system/fabcheck-exporter.service (its ExecStart in INSTALLED/bin: /usr or
# /usr/local; systemd reads units from both lib/systemd/system directories).
layout() {
	local p=$1 zsh_dir=$2 installed=$3
	install -D -m 0755 "$bin" "$p/bin/fabcheck"
	mkdir -p "$p/share/man/man1"
	"$bin" manpage --dir "$p/share/man/man1"
	gzip -9n "$p"/share/man/man1/*.1
	install -d "$p/share/bash-completion/completions" "$p/$zsh_dir" "$p/share/fish/vendor_completions.d"
	"$bin" completions bash >"$p/share/bash-completion/completions/fabcheck"
	"$bin" completions zsh >"$p/$zsh_dir/_fabcheck"
	"$bin" completions fish >"$p/share/fish/vendor_completions.d/fabcheck.fish"
	install -D -m 0644 -t "$p/share/doc/fabcheck" README.md LICENSE
	install -D -m 0644 -t "$p/share/doc/fabcheck/docs" docs/*.md
	install -D -m 0755 soft-roce-setup.sh "$p/share/fabcheck/soft-roce-setup.sh"
	install -D -m 0644 contrib/nhc/fabcheck.nhc "$p/share/fabcheck/contrib/nhc/fabcheck.nhc"
	install -D -m 0755 contrib/slurm/fabcheck-healthcheck.sh "$p/share/fabcheck/contrib/slurm/fabcheck-healthcheck.sh"
	install -D -m 0755 contrib/slurm/fabcheck-mesh.sbatch "$p/share/fabcheck/contrib/slurm/fabcheck-mesh.sbatch"
	install -D -m 0644 -t "$p/share/fabcheck/contrib/slurm" contrib/slurm/README.md contrib/slurm/slurm-healthcheck.conf
	install -D -m 0644 -t "$p/share/fabcheck/contrib/k8s" contrib/k8s/*.yaml contrib/k8s/README.md
	install -D -m 0644 -t "$p/share/fabcheck/contrib/docker" contrib/docker/Dockerfile
	install -D -m 0644 -t "$p/share/fabcheck/contrib/prometheus" contrib/prometheus/fabcheck.rules.yml \
		contrib/prometheus/fabcheck.rules.test.yml contrib/prometheus/alertmanager-inhibit.yml \
		contrib/prometheus/grafana-dashboard.json contrib/prometheus/exporter-daemonset.yaml
	# The exporter's unit, installed but neither enabled nor started (no maintainer script):
	# `systemctl enable --now fabcheck-exporter` is the operator's choice.
	install -D -m 0644 contrib/systemd/fabcheck-exporter.service "$p/lib/systemd/system/fabcheck-exporter.service"
	sed -i "s|^ExecStart=/usr/bin/fabcheck |ExecStart=$installed/bin/fabcheck |" "$p/lib/systemd/system/fabcheck-exporter.service"
	# Installed scripts name their interpreter by path, as distributions require (not /usr/bin/env).
	sed -i '1s|^#!/usr/bin/env bash$|#!/bin/bash|' "$p/share/fabcheck/soft-roce-setup.sh" "$p/share/fabcheck/contrib/slurm/fabcheck-healthcheck.sh"
}

# tar.gz: a /usr/local-style prefix (`tar -xzf ... -C /usr/local --strip-components=1`).
layout "$work/tar/$name" share/zsh/site-functions /usr/local
tar -C "$work/tar" --owner=0 --group=0 --numeric-owner --sort=name --mtime="@$SOURCE_DATE_EPOCH" -cf - "$name" | gzip -9n >"$dist/$name.tar.gz"

# Both packages' changelogs come from the version and the build date (one entry per release).
year=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y)
deb_date=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
rpm_date=$(LC_ALL=C date -u -d "@$SOURCE_DATE_EPOCH" '+%a %b %d %Y')
homepage_deb=${homepage:+Homepage: $homepage}
homepage_rpm=${homepage:+URL: $homepage}

# .deb: Debian's zsh reads vendor-completions.
deb_root=$work/deb
layout "$deb_root/usr" share/zsh/vendor-completions /usr
printf '%s\n' "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" \
	"Upstream-Name: fabcheck" "" "Files: *" "Copyright: $year The fabcheck authors" "License: Apache-2.0" "" \
	"License: Apache-2.0" " On Debian systems the full text of the Apache License, Version 2.0, is in" \
	" /usr/share/common-licenses/Apache-2.0." >"$deb_root/usr/share/doc/fabcheck/copyright"
# A native package's changelog (debian-policy 12.7), compressed as policy asks.
printf '%s\n' "fabcheck ($version) unstable; urgency=medium" "" "  * Release $version (commit $commit)." "" \
	" -- $maintainer  $deb_date" | gzip -9n >"$deb_root/usr/share/doc/fabcheck/changelog.gz"
mkdir -p "$deb_root/DEBIAN"
{
	cat <<EOF
Package: fabcheck
Version: $version
Architecture: amd64
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$deb_root" | cut -f1)
Depends: libc6 (>= $min_glibc)
Recommends: rdma-core, ibverbs-providers, librdmacm1, infiniband-diags, ethtool
Suggests: mstflint
Section: net
Priority: optional
EOF
	[[ -n $homepage_deb ]] && echo "$homepage_deb"
	cat <<EOF
Description: $summary
 A native, verbs-level RDMA fabric validator: device and port inventory,
 the bring-up checklist with causes and remedies, RC latency and bandwidth
 between nodes, whole-cluster meshes and the InfiniBand subnet over MADs.
 libibverbs, librdmacm and the MAD libraries are loaded at run time: without
 rdma-core it still runs and says what to install.
EOF
} >"$deb_root/DEBIAN/control"
(cd "$deb_root" && find usr -type f -print0 | sort -z | xargs -0 md5sum >DEBIAN/md5sums)
deb=$dist/fabcheck_${version}_amd64.deb
dpkg-deb --root-owner-group -Zxz --build "$deb_root" "$deb" >/dev/null

# fabcheck-dbgsym: the debug info where gdb and debuginfod look for it, by build id (as
# debhelper's automatic -dbgsym packages are laid out).
dbg_root=$work/dbgsym
dbg_file=$dbg_root/usr/lib/debug/.build-id/${build_id:0:2}/${build_id:2}.debug
install -D -m 0644 "$debug" "$dbg_file"
mkdir -p "$dbg_root/usr/share/doc" "$dbg_root/DEBIAN"
ln -s fabcheck "$dbg_root/usr/share/doc/fabcheck-dbgsym"
cat >"$dbg_root/DEBIAN/control" <<EOF
Package: fabcheck-dbgsym
Source: fabcheck
Version: $version
Auto-Built-Package: debug-symbols
Architecture: amd64
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$dbg_root" | cut -f1)
Depends: fabcheck (= $version)
Section: debug
Priority: optional
Description: debug symbols for fabcheck
Build-Ids: $build_id
EOF
(cd "$dbg_root" && find usr -type f -print0 | sort -z | xargs -0 md5sum >DEBIAN/md5sums)
dbgsym=$dist/fabcheck-dbgsym_${version}_amd64.deb
dpkg-deb --root-owner-group -Zxz --build "$dbg_root" "$dbgsym" >/dev/null

# .rpm: rpmbuild packs the same tree; no automatic requirements (only glibc, stated).
rpm_root=$work/rpm-root
# spec_sh_word STRING: STRING as one word of a spec's shell section: single-quoted, `%` doubled
# (rpm expands macros first). $work lies in the target directory: its path may hold a space.
spec_sh_word() {
	local s=${1//\'/\'\\\'\'}
	printf "'%s'" "${s//%/%%}"
}
layout "$rpm_root/usr" share/zsh/site-functions /usr
mkdir -p "$work/rpm/SPECS"
{
	cat <<EOF
Name: fabcheck
Version: $version
Release: 1
Summary: $summary
License: Apache-2.0
Group: Applications/System
Packager: $maintainer
EOF
	[[ -n $homepage_rpm ]] && echo "$homepage_rpm"
	cat <<EOF
BuildArch: x86_64
AutoReqProv: no
Requires: glibc >= $min_glibc
Recommends: rdma-core
Recommends: libibverbs
Recommends: librdmacm
Recommends: infiniband-diags
Recommends: ethtool
Suggests: mstflint

%description
A native, verbs-level RDMA fabric validator: device and port inventory,
the bring-up checklist with causes and remedies, RC latency and bandwidth
between nodes, whole-cluster meshes and the InfiniBand subnet over MADs.
libibverbs, librdmacm and the MAD libraries are loaded at run time:
without rdma-core it still runs and says what to install.

%install
mkdir -p "%{buildroot}"
cp -a $(spec_sh_word "$rpm_root/.") "%{buildroot}/"

%files
EOF
	(cd "$rpm_root" && find . -type f | sed 's|^\.||' | sort | while read -r f; do
		case $f in
		/usr/share/doc/*) echo "%doc $f" ;;
		*) echo "$f" ;;
		esac
	done)
	# Every directory of its own, so `rpm -e` leaves none behind.
	(cd "$rpm_root" && find ./usr/share/doc/fabcheck ./usr/share/fabcheck -type d | sed 's|^\.||' | sort | sed 's|^|%dir |')
	printf '%s\n' "" "%changelog" "* $rpm_date $maintainer - $version-1" "- Release $version (commit $commit)."
} >"$work/rpm/SPECS/fabcheck.spec"
rpmbuild --quiet -bb "$work/rpm/SPECS/fabcheck.spec" \
	--define "_topdir $work/rpm" --define '_build_id_links none' --define 'debug_package %{nil}' \
	--define '__os_install_post %{nil}' --define '_binary_payload w9.xzdio' >/dev/null
rpm=$dist/fabcheck-$version-1.x86_64.rpm
cp "$work/rpm/RPMS/x86_64/fabcheck-$version-1.x86_64.rpm" "$rpm"

(cd "$dist" && sha256sum -- *.tar.gz *.deb *.rpm *.debug >SHA256SUMS)

# --- verification -----------------------------------------------------------------------------------
# Every command's manual page (the hidden agent and manpage have none).
man_pages=(fabcheck fabcheck-check fabcheck-devices fabcheck-pair fabcheck-mesh fabcheck-serve fabcheck-fabric fabcheck-exporter fabcheck-compare fabcheck-completions)
# systemd_word PATH: PATH as the executable of a unit's ExecStart= (systemd.syntax(7), "Quoting"):
# in double quotes, `\` and `"` escaped, `%` doubled (a specifier otherwise).
systemd_word() {
	local s=${1//\\/\\\\}
	s=${s//\"/\\\"}
	printf '"%s"' "${s//%/%%}"
}
# verify LABEL PREFIX [INSTALLED]: the unpacked binary runs, checks a captured tree, and every file
# is there; the exporter's unit runs INSTALLED/bin/fabcheck (default /usr).
verify() {
	local label=$1 p=$2 installed=${3:-/usr} out rc
	[[ -x $p/bin/fabcheck ]] || { fail "$label: no bin/fabcheck"; return; }
	out=$("$p/bin/fabcheck" --version 2>&1) || fail "$label: fabcheck --version failed: $out"
	[[ $out == "fabcheck $version"* ]] || fail "$label: --version says '${out%%$'\n'*}', not $version"
	rc=0
	out=$("$p/bin/fabcheck" check --sysfs-root "$healthy_fixture" --format oneline 2>&1) || rc=$?
	[[ $rc -eq 0 && $out == "fabcheck check PASS" ]] || fail "$label: check of $healthy_fixture: exit $rc, '$out'"
	local man1=$p/share/man/man1
	for page in "${man_pages[@]}"; do
		[[ -f $man1/$page.1.gz ]] || { fail "$label: $page.1.gz missing"; continue; }
		# man itself renders each page at a terminal's width, and groff warns about nothing in it.
		out=$(MANWIDTH=80 man --warnings -l "$man1/$page.1.gz" 2>&1 >/dev/null) || fail "$label: man -l $page.1 failed: $out"
		[[ -z $out ]] || fail "$label: man --warnings -l $page.1: $out"
	done
	# man renders the page; groff finds nothing to warn about in it.
	out=$(MANWIDTH=100 man -l "$man1/fabcheck.1.gz" 2>&1) || fail "$label: man -l fabcheck.1 failed"
	grep -q 'EXIT STATUS' <<<"$out" || fail "$label: fabcheck.1 renders without its EXIT STATUS section"
	out=$(MANWIDTH=100 man -l "$man1/fabcheck-check.1.gz" 2>&1) || fail "$label: man -l fabcheck-check.1 failed"
	grep -q -- '--sysfs-root' <<<"$out" || fail "$label: fabcheck-check.1 renders without --sysfs-root"
	out=$(zcat "$man1"/*.1.gz | groff -man -Tutf8 -ww -z 2>&1)
	[[ -z $out ]] || fail "$label: groff warns about the man pages: $out"
	bash -n "$p/share/bash-completion/completions/fabcheck" || fail "$label: bash completion does not parse"
	[[ -s $p/share/fish/vendor_completions.d/fabcheck.fish ]] || fail "$label: no fish completion"
	compgen -G "$p/share/zsh/*/_fabcheck" >/dev/null || fail "$label: no zsh completion"
	# Every command is offered, the hidden ones are not, and -d lists the node's devices.
	local script
	for script in "$p/share/bash-completion/completions/fabcheck" "$p"/share/zsh/*/_fabcheck "$p/share/fish/vendor_completions.d/fabcheck.fish"; do
		[[ -f $script ]] || continue
		for word in devices check fabric pair mesh serve exporter compare completions write_bw /sys/class/infiniband; do
			grep -q -- "$word" "$script" || fail "$label: $(basename "$script") lacks $word"
		done
		grep -qE 'fabcheck__subcmd__(agent|manpage)|-a "(agent|manpage)"|'"'"'(agent|manpage):' "$script" &&
			fail "$label: $(basename "$script") offers a hidden command (agent, manpage)"
	done
	# The exporter's unit: there, runs the installed binary, and systemd finds nothing wrong in it
	# (run against this unpacked binary and man pages).
	local unit=$p/lib/systemd/system/fabcheck-exporter.service
	if [[ ! -f $unit ]]; then
		fail "$label: lib/systemd/system/fabcheck-exporter.service missing"
	else
		grep -q "^ExecStart=$installed/bin/fabcheck exporter --listen 127.0.0.1:" "$unit" || fail "$label: the unit does not run $installed/bin/fabcheck on loopback: $(grep ExecStart= "$unit")"
		if command -v systemd-analyze >/dev/null; then
			local scratch
			scratch=$(mktemp -d "$work/unit.XXXXXX")
			# The unpacked binary's path is the tree's (a clone's may hold a space, a `|` or
			# an `&`): never spliced into a sed expression; one word of ExecStart= in quotes.
			FROM="ExecStart=$installed/bin/fabcheck " TO="ExecStart=$(systemd_word "$p/bin/fabcheck") " \
				awk 'index($0, ENVIRON["FROM"]) == 1 { $0 = ENVIRON["TO"] substr($0, length(ENVIRON["FROM"]) + 1) } { print }' \
				"$unit" >"$scratch/fabcheck-exporter.service"
			out=$(MANPATH=$p/share/man systemd-analyze verify "$scratch/fabcheck-exporter.service" 2>&1) ||
				fail "$label: systemd-analyze verify fabcheck-exporter.service: $out"
			[[ -z $out ]] || fail "$label: systemd-analyze verify fabcheck-exporter.service says: $out"
		else
			say "$label: systemd-analyze is not installed: the unit's syntax is not verified"
		fi
	fi
	for f in doc/fabcheck/README.md doc/fabcheck/LICENSE doc/fabcheck/docs/contract.md doc/fabcheck/docs/ci.md \
		fabcheck/soft-roce-setup.sh fabcheck/contrib/nhc/fabcheck.nhc fabcheck/contrib/slurm/fabcheck-healthcheck.sh \
		fabcheck/contrib/prometheus/fabcheck.rules.yml fabcheck/contrib/prometheus/alertmanager-inhibit.yml \
		fabcheck/contrib/slurm/fabcheck-mesh.sbatch fabcheck/contrib/slurm/slurm-healthcheck.conf; do
		[[ -s $p/share/$f ]] || fail "$label: share/$f missing"
	done
	say "$label: ok"
}

# leftovers ROOT: what an erase left in a scratch root (up to 5 paths, relative to it): any file
# outside var/ (the package manager's own database), and any directory named after fabcheck.
# Matched on the path inside ROOT, never the absolute one: ROOT lies in the checkout, and a
# clone named `fabcheck` (git's default) once matched every directory of it.
leftovers() {
	find "$1" -mindepth 1 -printf '%y %P\n' |
		awk '{ type = substr($0, 1, 1); path = substr($0, 3) }
			path != "var" && substr(path, 1, 4) != "var/" && (type == "f" || path ~ /fabcheck/) { print path }' | head -n 5
}

v=$work/verify
mkdir -p "$v/tar" "$v/deb" "$v/rpm"
tar -C "$v/tar" -xzf "$dist/$name.tar.gz"
verify "tar.gz" "$v/tar/$name" /usr/local

dpkg-deb -x "$deb" "$v/deb"
verify ".deb (dpkg-deb -x)" "$v/deb/usr"
fields=$(dpkg-deb -f "$deb" Depends Recommends Suggests)
grep -q '^Depends: libc6 (>= 2.28)$' <<<"$fields" || fail ".deb: Depends is not libc6 (>= 2.28) alone: $fields"
grep -q '^Recommends: rdma-core, ibverbs-providers, librdmacm1, infiniband-diags, ethtool$' <<<"$fields" || fail ".deb: Recommends: $fields"
grep -q '^Suggests: mstflint$' <<<"$fields" || fail ".deb: Suggests: $fields"
grep -qiE 'Depends:.*(rdma|ibverbs|infiniband)' <<<"$fields" && fail ".deb hard-depends on an RDMA package: $fields"
# Installed for real, into a scratch dpkg root (no maintainer scripts, so nothing runs; the host's
# own dpkg database is not touched), then removed: it must leave nothing behind.
droot=$v/dpkg-root
mkdir -p "$droot/var/lib/dpkg/info" "$droot/var/lib/dpkg/updates"
touch "$droot/var/lib/dpkg/status"
if dpkg --root="$droot" --force-depends --force-not-root -i "$deb" >"$v/dpkg.log" 2>&1; then
	dpkg --root="$droot" -s fabcheck 2>/dev/null | grep -q '^Status: install ok installed' || fail ".deb: dpkg -i did not record it installed"
	verify ".deb (dpkg -i)" "$droot/usr"
	dpkg --root="$droot" --force-depends --force-not-root -r fabcheck >>"$v/dpkg.log" 2>&1 || fail ".deb: dpkg -r failed: $(cat "$v/dpkg.log")"
	left=$(leftovers "$droot")
	[[ -z $left ]] || fail ".deb: dpkg -r left files: $left"
else
	fail ".deb: dpkg -i into a scratch root failed: $(cat "$v/dpkg.log")"
fi

(cd "$v/rpm" && rpm2cpio "$rpm" | cpio -idm --quiet)
verify ".rpm (rpm2cpio)" "$v/rpm/usr"
requires=$(rpm -qp --requires "$rpm" 2>/dev/null | grep -v '^rpmlib(' | tr '\n' ' ')
recommends=$(rpm -qp --recommends "$rpm" 2>/dev/null | tr '\n' ' ')
[[ $requires == "glibc >= 2.28 " ]] || fail ".rpm requires '$requires', not glibc >= 2.28 alone"
[[ $(tr ' ' '\n' <<<"$recommends" | sort | xargs) == "ethtool infiniband-diags libibverbs librdmacm rdma-core" ]] ||
	fail ".rpm recommends '$recommends'"
# Installed into and erased from a scratch rpm root: it must leave no file and no directory of its own.
rroot=$v/rpm-root
mkdir -p "$rroot"
if rpm --root "$rroot" --dbpath /var/lib/rpm --nodeps --noscripts -i "$rpm" >"$v/rpm.log" 2>&1; then
	verify ".rpm (rpm -i)" "$rroot/usr"
	rpm --root "$rroot" --dbpath /var/lib/rpm --nodeps --noscripts -e fabcheck >>"$v/rpm.log" 2>&1 || fail ".rpm: rpm -e failed: $(cat "$v/rpm.log")"
	left=$(leftovers "$rroot")
	[[ -z $left ]] || fail ".rpm: rpm -e left behind: $left"
else
	fail ".rpm: rpm -i into a scratch root failed: $(cat "$v/rpm.log")"
fi

# The distributions' own linters: no lintian error (E:) on either .deb, no rpmlint error but the
# signature (these packages are signed, if at all, by whoever publishes them).
if command -v lintian >/dev/null; then
	for pkg in "$deb" "$dbgsym"; do
		out=$(lintian --tag-display-limit 0 "$pkg" 2>&1 || true)
		errors=$(grep '^E:' <<<"$out" || true)
		[[ -z $errors ]] || fail "lintian $(basename "$pkg"): $errors"
		say "lintian $(basename "$pkg"): $(grep -c '^E:' <<<"$out") errors, $(grep -c '^W:' <<<"$out") warnings"
	done
else
	fail "lintian is not installed (tests/deps.sh installs it)"
fi
if command -v rpmlint >/dev/null; then
	out=$(rpmlint "$rpm" 2>&1 || true)
	errors=$(grep -E '^[^ ]+: E: ' <<<"$out" | grep -vE 'E: no-signature' || true)
	[[ -z $errors ]] || fail "rpmlint $(basename "$rpm"): $errors"
	say "rpmlint $(basename "$rpm"): $(tail -n 1 <<<"$out")"
else
	fail "rpmlint is not installed (tests/deps.sh installs it)"
fi
# The dbgsym package holds the debug file under the binary's build id.
dbg_list=$(dpkg-deb -c "$dbgsym")
grep -q "usr/lib/debug/.build-id/${build_id:0:2}/${build_id:2}.debug" <<<"$dbg_list" || fail "fabcheck-dbgsym lacks the debug file of build id $build_id"

# A node without rdma-core: a root holding only the binary, the libraries ldd lists and the loader.
chroot_test() {
	local c=$v/chroot lib rc out
	mkdir -p "$c"
	cp "$bin" "$c/fabcheck"
	for lib in $(ldd "$bin" | grep -oE '/[^ ]+'); do
		mkdir -p "$c$(dirname "$lib")"
		cp -L "$lib" "$c$lib"
	done
	local run=(chroot "$c")
	if [[ $(id -u) -ne 0 ]]; then
		if unshare -r true 2>/dev/null; then
			run=(unshare -r chroot "$c")
		else
			say "SKIPPED the chroot test: not root and no user namespaces (unshare -r)"
			return
		fi
	fi
	out=$("${run[@]}" /fabcheck --version 2>&1) || { fail "chroot: fabcheck --version failed: $out"; return; }
	rc=0
	out=$("${run[@]}" /fabcheck devices 2>&1) || rc=$?
	[[ $rc -eq 2 ]] || fail "chroot: fabcheck devices exited $rc, not 2: $out"
	grep -qiE 'rdma-core|libibverbs' <<<"$out" || fail "chroot: fabcheck devices does not name rdma-core or libibverbs: $out"
	rc=0
	out=$("${run[@]}" /fabcheck check --format json 2>"$v/chroot.err") || rc=$?
	grep -q '"id": *"stack.rdma_core"' <<<"$out" ||
		fail "chroot: fabcheck check --format json (exit $rc) has no stack.rdma_core finding: ${out:0:400} $(head -c 400 "$v/chroot.err")"
	say "chroot without rdma-core: done ($(find "$c" -type f | wc -l) files: the binary and $(ldd "$bin" | grep -c /) libraries)"
}
chroot_test

say "target/dist:"
find "$dist" -maxdepth 1 -type f -printf '  %12s  %f\n' | sort -k 2 >&2
say "took $(($(date +%s) - start)) s"
if [[ ${#failures[@]} -gt 0 ]]; then
	printf 'package: %s\n' "${#failures[@]} check(s) failed:" "${failures[@]}" >&2
	exit 1
fi
say "all checks passed: $name"
