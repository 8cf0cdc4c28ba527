#!/usr/bin/env bash
# CI: a Docker engine that runs linux/arm64 containers, for make sam-test and
# make container-test, started and stopped by .ci/run (which installs
# Debian's docker.io, qemu-user-static and binfmt-support first).
#
#   scripts/ci-docker.sh up    arm64 emulation (scripts/arm64-binfmt.sh: mount
#                              binfmt_misc and enable qemu-aarch64, flags PF, so
#                              it works inside containers) where it is not on
#                              already; start dockerd on a private data root
#                              unless an engine answers already
#   scripts/ci-docker.sh down  undo what up did: stop that dockerd, remove its
#                              data root (images, containers), its bridge and
#                              its iptables rules, and put binfmt_misc back as
#                              it was
#
# dockerd runs without its userland proxy: published ports are then NAT
# rules, so a connection to one fails until the container listens. With the
# proxy, SAM's readiness check connects to the proxy at once and its request
# can reach an arm64 emulator that is still starting under qemu.
set -euo pipefail

state=${CI_DOCKER_STATE:-/tmp/idemlambda-ci-docker}
say() { echo "ci-docker: $*" >&2; }

up() {
	mkdir -p "$state"
	: >"$state/did"
	"$(dirname "$0")/arm64-binfmt.sh" up "$state"

	if docker info >/dev/null 2>&1; then
		say "a Docker engine answers already: using it as it is"
		return
	fi
	ip link show docker0 >/dev/null 2>&1 || echo delete-bridge >>"$state/did"
	# dockerd adds NAT and filter rules (and sets FORWARD to DROP); down
	# puts the tables back as they were.
	iptables-save >"$state/iptables.before"
	sysctl -n net.ipv4.ip_forward >"$state/ip_forward.before"
	dockerd --data-root "$state/data" --exec-root "$state/exec" --pidfile "$state/dockerd.pid" \
		--userland-proxy=false >"$state/dockerd.log" 2>&1 &
	echo stop-dockerd >>"$state/did"
	for _ in $(seq 1 120); do
		if docker info >/dev/null 2>&1; then
			say "dockerd $(docker info --format '{{.ServerVersion}}') up (pid $(cat "$state/dockerd.pid"), data root $state/data," \
				"bridge docker0 $(ip -4 -o addr show dev docker0 2>/dev/null | awk '{ print $4; exit }'))"
			return
		fi
		sleep 0.5
	done
	say "dockerd did not answer within 60 s; make sam-test and make container-test need it. Its log:"
	tail -n 40 "$state/dockerd.log" >&2
	exit 1
}

down() {
	[ -f "$state/did" ] || return 0
	if grep -qx stop-dockerd "$state/did"; then
		if [ -f "$state/dockerd.pid" ]; then
			local pid
			pid=$(cat "$state/dockerd.pid")
			kill "$pid" 2>/dev/null || true
			for _ in $(seq 1 60); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.5
			done
			if kill -0 "$pid" 2>/dev/null; then
				say "dockerd (pid $pid) did not stop in 30 s; killing it"
				kill -9 "$pid" 2>/dev/null || true
			fi
		fi
		# Anything dockerd left mounted under its roots, deepest first.
		awk -v s="$state/" 'index($2, s) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
			umount "$m" 2>/dev/null || umount -l "$m" || true
		done
		rm -rf "$state/data" "$state/exec"
		say "dockerd stopped; its data root (images, containers) removed"
	fi
	if grep -qx stop-dockerd "$state/did"; then
		[ -f "$state/iptables.before" ] && iptables-restore <"$state/iptables.before"
		[ -f "$state/ip_forward.before" ] && sysctl -q -w "net.ipv4.ip_forward=$(cat "$state/ip_forward.before")"
	fi
	if grep -qx delete-bridge "$state/did"; then
		ip link delete docker0 2>/dev/null || true
	fi
	"$(dirname "$0")/arm64-binfmt.sh" down "$state"
	rm -rf "$state"
}

case ${1:-} in
up) up ;;
down) down ;;
*)
	echo "usage: $0 up|down" >&2
	exit 2
	;;
esac
