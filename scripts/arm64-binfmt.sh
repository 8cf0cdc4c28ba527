#!/usr/bin/env bash
# arm64 emulation on an x86 machine: the kernel runs linux/arm64 binaries
# through qemu (Debian's qemu-user-static and binfmt-support), for the
# containers of make sam-test and make container-test (scripts/ci-docker.sh)
# and the bootstraps MiniStack runs as processes (make deploy-local).
#
#   scripts/arm64-binfmt.sh up STATE_DIR    mount binfmt_misc and enable
#                                           qemu-aarch64 (flags PF: the
#                                           interpreter is loaded once, so it
#                                           works inside containers too) where
#                                           they are not already, recording in
#                                           STATE_DIR what it did
#   scripts/arm64-binfmt.sh down STATE_DIR  undo what up recorded there
#
# On an arm64 machine there is nothing to do. Enabling needs root; without
# it, up says what to run.
set -euo pipefail

cmd=${1:-}
state=${2:-}
say() { echo "arm64-binfmt: $*" >&2; }
[ -n "$state" ] || { echo "usage: $0 up|down STATE_DIR" >&2; exit 2; }
binfmt=/proc/sys/fs/binfmt_misc

up() {
	mkdir -p "$state"
	: >"$state/binfmt.did"
	if [ "$(uname -m)" = aarch64 ]; then
		say "this machine is arm64: nothing to emulate"
		return
	fi
	# update-binfmts (binfmt-support) and the qemu-aarch64 format that
	# qemu-user-static installs for it.
	if ! command -v update-binfmts >/dev/null 2>&1 || [ ! -f /usr/share/binfmts/qemu-aarch64 ]; then
		say "arm64 emulation needs qemu-user-static and binfmt-support (Debian: apt-get install qemu-user-static binfmt-support)"
		exit 1
	fi
	if [ ! -e "$binfmt/register" ]; then
		mount -t binfmt_misc binfmt_misc "$binfmt" ||
			{ say "cannot mount $binfmt (root needed): mount -t binfmt_misc binfmt_misc $binfmt"; exit 1; }
		echo umount-binfmt >>"$state/binfmt.did"
	fi
	if ! grep -qx enabled "$binfmt/qemu-aarch64" 2>/dev/null; then
		update-binfmts --enable qemu-aarch64 ||
			{ say "cannot enable qemu-aarch64 (root needed): update-binfmts --enable qemu-aarch64"; exit 1; }
		echo disable-qemu >>"$state/binfmt.did"
	fi
	grep -q '^flags:.*F' "$binfmt/qemu-aarch64" ||
		{ say "qemu-aarch64 is registered without the F flag: $(grep flags "$binfmt/qemu-aarch64")"; exit 1; }
	say "qemu-aarch64 $(head -n1 "$binfmt/qemu-aarch64"), $(grep '^flags' "$binfmt/qemu-aarch64")"
}

down() {
	[ -f "$state/binfmt.did" ] || return 0
	if grep -qx disable-qemu "$state/binfmt.did"; then
		update-binfmts --disable qemu-aarch64 || true
	fi
	if grep -qx umount-binfmt "$state/binfmt.did"; then
		umount "$binfmt" || true
	fi
	rm -f "$state/binfmt.did"
}

case $cmd in
up) up ;;
down) down ;;
*)
	echo "usage: $0 up|down STATE_DIR" >&2
	exit 2
	;;
esac
