#!/usr/bin/env bash
# Makes sure the image `sam local invoke` builds its invoke image on is in
# the Docker engine, and prints its name (for --invoke-image, with
# --skip-pull-image).
#
# 1. Where a registry is reachable: the real Lambda base image, pulled
#    (SAM_BASE_IMAGE, default public.ecr.aws/lambda/provided:al2023-arm64).
# 2. Offline, if that image was pulled before: it, as it is.
# 3. Otherwise a stand-in, built once and then reused by its tag
#    (SAM_STANDIN_IMAGE, default idemlambda/lambda-provided-standin:al2023-arm64):
#    SAM adds its emulator on top with `RUN mv ... && chmod`, and the
#    functions are static Go binaries, so a tiny arm64 rootfs is enough:
#    Debian's busybox-static:arm64 (sh, mv, chmod, ...), /var/task,
#    /var/runtime, /tmp, /etc/passwd and this machine's CA bundle. It carries
#    its own name, so it never shadows the real image. Building it needs
#    apt-get and dpkg-deb (Debian or Ubuntu) and a Debian mirror; on other
#    machines, pull the real image once where a registry is reachable.
set -euo pipefail
cd "$(dirname "$0")/.."

real=${SAM_BASE_IMAGE:-public.ecr.aws/lambda/provided:al2023-arm64}
standin=${SAM_STANDIN_IMAGE:-idemlambda/lambda-provided-standin:al2023-arm64}
say() { echo "sam-base-image: $*" >&2; }

if docker pull --quiet --platform linux/arm64 "$real" >/dev/null 2>&1; then
	say "$real (pulled)"
	echo "$real"
	exit 0
fi
if docker image inspect "$real" >/dev/null 2>&1; then
	say "$real (no registry reachable; the copy pulled before)"
	echo "$real"
	exit 0
fi
if docker image inspect "$standin" >/dev/null 2>&1; then
	say "$standin (no registry reachable; the stand-in built before)"
	echo "$standin"
	exit 0
fi

for tool in apt-get dpkg-deb; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		say "no registry reachable to pull $real, and no $tool here to build a stand-in from Debian's busybox-static:arm64." \
			"Pull $real on a machine that reaches public.ecr.aws and move it over (docker save | docker load)."
		exit 1
	fi
done
ca=/etc/ssl/certs/ca-certificates.crt
[ -f "$ca" ] || { say "no CA bundle at $ca (install ca-certificates)"; exit 1; }

say "no registry reachable: building the stand-in $standin from Debian's busybox-static:arm64"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A private apt state: arm64 package lists without touching the machine's
# dpkg architectures or its own lists.
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/deb"
apt_opts=(-q -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache"
	-o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" update >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; exit 1; }
(cd "$work/deb" && apt-get "${apt_opts[@]}" download busybox-static:arm64 >>"$work/apt.log" 2>&1) ||
	{ cat "$work/apt.log" >&2; exit 1; }

root=$work/rootfs
mkdir -p "$root"
dpkg-deb -x "$work"/deb/busybox-static_*_arm64.deb "$root"
rm -rf "$root/usr/share"
# What SAM's Dockerfile runs (sh, mv, chmod) and a few tools to look around.
for applet in sh mv chmod cp rm mkdir ls cat ln env uname; do
	ln -s busybox "$root/bin/$applet"
done
mkdir -p "$root/var/task" "$root/var/runtime" "$root/var/rapid" "$root/opt" "$root/tmp" \
	"$root/etc/ssl/certs" "$root/etc/pki/tls/certs"
chmod 1777 "$root/tmp"
# The user Lambda runs functions as, and root for SAM's build step.
printf 'root:x:0:0:root:/root:/bin/sh\nsbx_user1051:x:993:990::/home/sbx_user1051:/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nsbx_user1051:x:990:\n' >"$root/etc/group"
# Where Go's crypto/x509 and Amazon Linux look for CA certificates.
cp "$ca" "$root/etc/ssl/certs/ca-certificates.crt"
ln -s ../../../ssl/certs/ca-certificates.crt "$root/etc/pki/tls/certs/ca-bundle.crt"
ctx=$work/context
mkdir -p "$ctx"
tar -C "$root" -cf "$ctx/rootfs.tar" .

# FROM scratch needs no registry, and --platform gives the image the arm64
# architecture in its config (docker import ignores --platform).
cat >"$ctx/Dockerfile" <<'DOCKERFILE'
FROM scratch
ADD rootfs.tar /
LABEL org.idemlambda.standin="public.ecr.aws/lambda/provided:al2023-arm64"
ENV PATH=/usr/local/bin:/usr/bin:/bin LAMBDA_TASK_ROOT=/var/task LAMBDA_RUNTIME_DIR=/var/runtime LANG=en_US.UTF-8 TZ=:/etc/localtime
WORKDIR /var/task
DOCKERFILE
docker build --quiet --platform linux/arm64 -t "$standin" "$ctx" \
	2> >(grep -v -e DEPRECATED -e 'legacy builder' -e buildx -e '^ *$' >&2) >/dev/null
arch=$(docker image inspect --format '{{.Os}}/{{.Architecture}}' "$standin")
[ "$arch" = linux/arm64 ] || { say "built $standin as $arch, want linux/arm64"; exit 1; }
say "$standin ($arch, $(docker image inspect --format '{{.Size}}' "$standin") bytes)"
echo "$standin"
