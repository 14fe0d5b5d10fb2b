#!/bin/sh
# A real ssh path between the two Soft-RoCE guests, so `pair` and `mesh` are tested over real
# ssh (key login, `ssh -T -o BatchMode=yes host fabcheck agent`, stdio), not only a stand-in.
#
#   tests/rxe/sshd.sh prepare DIR   on the host: Debian's sshd unpacked into DIR (apt-get
#                                   download + dpkg -x: nothing installed, no service started
#                                   on the host) and a fresh client key pair. Prints DIR.
#   tests/rxe/sshd.sh serve DIR     in guest 2: starts that sshd on $FABCHECK_VM_ADDR:22,
#                                   accepting the client key for root.
#   tests/rxe/sshd.sh client DIR    in guest 1: a private copy of the key and an `ssh` on
#                                   /tmp/ssh/bin that reads /tmp/ssh/config (the guest's /root
#                                   and /etc are the host's, read-only). Prints the bin dir.
set -eu
cmd=${1:?usage: sshd.sh prepare|serve|client DIR}
dir=${2:?usage: sshd.sh prepare|serve|client DIR}
die() { echo "sshd.sh: $*" >&2; exit 1; }

case $cmd in
prepare)
	mkdir -p "$dir/debs" "$dir/keys"
	if [ ! -x "$dir/root/usr/sbin/sshd" ]; then
		(cd "$dir/debs" && apt-get download openssh-server libwrap0 >/dev/null 2>"$dir/debs/apt.log") ||
			die "cannot download openssh-server and libwrap0 with apt-get (see $dir/debs/apt.log)"
		for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$dir/root"; done
	fi
	[ -x "$dir/root/usr/sbin/sshd" ] || die "no sshd in the unpacked package"
	rm -f "$dir/keys/client" "$dir/keys/client.pub"
	ssh-keygen -q -t ed25519 -N '' -C fabcheck-two-hosts -f "$dir/keys/client" || die "ssh-keygen failed"
	echo "$dir"
	;;
serve)
	addr=${FABCHECK_VM_ADDR:?run inside soft-roce-setup.sh --vm}
	mkdir -p /tmp/sshd /run/sshd
	chmod 755 /run/sshd
	# sshd drops privileges to the user "sshd", which the host may not have. root's sessions
	# run /bin/sh in a home of their own: the guest's /root is the host's, whose shell start-up
	# files (bash sources ~/.bashrc under sshd; pyenv, conda) cost seconds per session under
	# emulation and are not what is tested.
	mkdir -p /tmp/sshd/home
	sed 's|^root:\([^:]*\):0:0:\([^:]*\):[^:]*:[^:]*$|root:\1:0:0:\2:/tmp/sshd/home:/bin/sh|' /etc/passwd >/tmp/sshd/passwd
	grep -q '^root:.*:/tmp/sshd/home:/bin/sh$' /tmp/sshd/passwd || die "cannot give root a plain shell in the copy of /etc/passwd"
	grep -q '^sshd:' /tmp/sshd/passwd ||
		echo 'sshd:x:74:65534:sshd privilege separation:/run/sshd:/usr/sbin/nologin' >>/tmp/sshd/passwd
	mount --bind /tmp/sshd/passwd /etc/passwd || die "cannot bind the copy of /etc/passwd"
	ssh-keygen -q -t ed25519 -N '' -f /tmp/sshd/host_ed25519 || die "ssh-keygen failed"
	cat >/tmp/sshd/config <<EOF
ListenAddress $addr
Port 22
HostKey /tmp/sshd/host_ed25519
AuthorizedKeysFile $dir/keys/client.pub
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile /run/sshd.pid
LogLevel ERROR
EOF
	LD_LIBRARY_PATH="$dir/root/usr/lib/x86_64-linux-gnu" "$dir/root/usr/sbin/sshd" -f /tmp/sshd/config ||
		die "sshd did not start"
	echo "sshd.sh: sshd listening on $addr:22" >&2
	;;
client)
	mkdir -p /tmp/ssh/bin
	cp "$dir/keys/client" /tmp/ssh/id
	chmod 600 /tmp/ssh/id
	cat >/tmp/ssh/config <<EOF
Host *
	IdentityFile /tmp/ssh/id
	IdentitiesOnly yes
	StrictHostKeyChecking no
	UserKnownHostsFile /dev/null
	LogLevel ERROR
EOF
	real=$(command -v ssh) || die "no ssh client"
	printf '#!/bin/sh\nexec %s -F /tmp/ssh/config "$@"\n' "$real" >/tmp/ssh/bin/ssh
	chmod +x /tmp/ssh/bin/ssh
	echo /tmp/ssh/bin
	;;
*) die "unknown command $cmd" ;;
esac
