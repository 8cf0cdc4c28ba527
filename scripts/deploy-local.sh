#!/usr/bin/env bash
# make deploy-local: template.yaml deployed as committed to MiniStack, an AWS
# emulator, and the README's requests sent through its API Gateway
# (test/deploy, build tag deploy). No AWS account, no Docker.
#
# 1. MiniStack (PyPI ministack, MIT) pinned, with the botocore it pins and
#    the SAM translator aws-sam-cli pins (MiniStack applies SAM's transform
#    with it), in .venv/ministack (reused while the pins hold).
# 2. arm64 emulation (scripts/arm64-binfmt.sh): MiniStack runs the functions'
#    provided.al2023 arm64 bootstraps as processes of this machine, which
#    the kernel hands to qemu.
# 3. MiniStack on a free port of 127.0.0.1 (BIND_HOST), with AUTH=true, so it
#    evaluates each function's role on the calls the function makes; its
#    state, its functions' code and its temporary files in a directory of
#    its own; an environment of its own, since each function process it
#    starts inherits it: AWS_ENDPOINT_URL (MiniStack itself) and nothing of
#    the caller's, and any other address behind a closed proxy port.
# 4. The test, with AWS_ENDPOINT_URL pointed at MiniStack and dummy
#    credentials, so sam and every SDK client call it and nothing else:
#    sam build, the adjustments it prints, sam deploy --resolve-s3, the
#    requests; it deletes the stack however it ends.
# 5. However this script ends (failure, Ctrl-C): MiniStack and every process
#    it started stopped, emulation put back as it was, the directory removed.
#
# DEPLOY_LOCAL_KEEP=1 keeps the stack and MiniStack up after the test, until
# Ctrl-C, to send requests by hand (the script prints how).
set -euo pipefail
cd "$(dirname "$0")/.."

MINISTACK_VERSION=${MINISTACK_VERSION:-1.5.33}
# ministack 1.5.33 requires botocore==1.43.106 exactly.
MINISTACK_BOTOCORE_VERSION=${MINISTACK_BOTOCORE_VERSION:-1.43.106}
# What aws-sam-cli (SAM_VERSION, mk/sam.mk) pins: the same transform as sam validate.
MINISTACK_SAM_TRANSLATOR_VERSION=${MINISTACK_SAM_TRANSLATOR_VERSION:-1.115.0}
VENV=${MINISTACK_VENV:-.venv/ministack}
SAM=${SAM:-.venv/sam/bin/sam}
GO=${GO:-go}
REGION=${DEPLOY_LOCAL_REGION:-us-east-1}
# Seconds to wait for MiniStack to listen: only a hang takes this long.
START_TIMEOUT=${MINISTACK_START_TIMEOUT:-120}
say() { echo "deploy-local: $*" >&2; }

[ -x "$SAM" ] || { say "no sam CLI at $SAM (make deploy-local installs it into .venv/sam)"; exit 2; }

stamp="$VENV/.ministack-$MINISTACK_VERSION-botocore-$MINISTACK_BOTOCORE_VERSION-samtranslator-$MINISTACK_SAM_TRANSLATOR_VERSION"
if [ ! -f "$stamp" ]; then
	say "installing ministack==$MINISTACK_VERSION, botocore==$MINISTACK_BOTOCORE_VERSION, aws-sam-translator==$MINISTACK_SAM_TRANSLATOR_VERSION into $VENV"
	[ -x "$VENV/bin/pip" ] || python3 -m venv "$VENV"
	"$VENV/bin/pip" install --disable-pip-version-check --quiet "ministack==$MINISTACK_VERSION" \
		"botocore==$MINISTACK_BOTOCORE_VERSION" "aws-sam-translator==$MINISTACK_SAM_TRANSLATOR_VERSION"
	rm -f "$VENV"/.ministack-*
	touch "$stamp"
fi

work=$(mktemp -d -t idemlambda-deploy-local.XXXXXX)
run=${work##*.}
ministack=
tests=
cleanup() {
	status=$?
	trap - EXIT INT TERM
	# Each leads its own process group (setsid): the test and the sam and
	# go processes it runs, MiniStack and the function processes it runs.
	if [ -n "$tests" ] && kill -0 -- "-$tests" 2>/dev/null; then
		kill -TERM -- "-$tests" 2>/dev/null || true
		say "the test (process group $tests) stopped"
	fi
	if [ -n "$ministack" ]; then
		kill -TERM -- "-$ministack" 2>/dev/null || true
		for _ in $(seq 1 100); do
			kill -0 -- "-$ministack" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL -- "-$ministack" 2>/dev/null || true
		if [ "$status" -ne 0 ]; then
			say "the test failed; MiniStack's log ends:"
			tail -n 60 "$work/ministack.log" >&2 || true
		fi
		say "MiniStack (process group $ministack) stopped"
	fi
	scripts/arm64-binfmt.sh down "$work" || true
	# The adjusted template the test writes beside the built one.
	rm -f ".aws-sam/build/template.deploy-local.$run.json"
	rm -rf "$work"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

scripts/arm64-binfmt.sh up "$work"

# A free port: bind port 0, read it, let it go. MiniStack failing to get it
# after all shows below as an early exit with its log.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
closed=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
endpoint=http://127.0.0.1:$port
mkdir -p "$work/home" "$work/tmp"
# Every request of MiniStack and of the functions it runs goes to MiniStack
# (AWS_ENDPOINT_URL) or, behind the proxy variables, to a closed port.
env -i PATH="$PATH" HOME="$work/home" TMPDIR="$work/tmp" LANG=C.UTF-8 \
	GATEWAY_PORT="$port" BIND_HOST=127.0.0.1 MINISTACK_HOST=localhost AUTH=true \
	MINISTACK_REGION="$REGION" AWS_ENDPOINT_URL="$endpoint" \
	S3_DATA_DIR="$work/s3" STATE_DIR="$work/state" PERSIST_STATE=0 \
	HTTP_PROXY="http://127.0.0.1:$closed" HTTPS_PROXY="http://127.0.0.1:$closed" \
	http_proxy="http://127.0.0.1:$closed" https_proxy="http://127.0.0.1:$closed" \
	NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost \
	setsid "$VENV/bin/ministack" >"$work/ministack.log" 2>&1 &
ministack=$!

deadline=$((SECONDS + START_TIMEOUT))
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
	if ! kill -0 "$ministack" 2>/dev/null; then
		say "MiniStack exited before serving; its log:"
		cat "$work/ministack.log" >&2
		exit 1
	fi
	if [ "$SECONDS" -ge "$deadline" ]; then
		say "MiniStack did not listen on 127.0.0.1:$port within ${START_TIMEOUT}s; its log:"
		cat "$work/ministack.log" >&2
		exit 1
	fi
	sleep 0.2
done
say "MiniStack $MINISTACK_VERSION on $endpoint (pid $ministack, AUTH=true, state in $work)"

# The modules first, through whatever proxy this shell has: sam build's go
# build then finds them cached behind the closed proxy port below.
"$GO" mod download

# sam and every client of the test: MiniStack, dummy credentials, no
# profile or config file, and any other address behind the closed port
# (SAM's version check). The functions' own endpoint variables (the SDK's
# AWS_ENDPOINT_URL_<SERVICE>) are cleared, so AWS_ENDPOINT_URL is the one.
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_DEFAULT_PROFILE AWS_IGNORE_CONFIGURED_ENDPOINT_URLS
for v in $(compgen -e | grep '^AWS_ENDPOINT_URL_' || true); do unset "$v"; done
export AWS_ENDPOINT_URL=$endpoint AWS_REGION=$REGION AWS_DEFAULT_REGION=$REGION
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
export AWS_CONFIG_FILE=$work/home/aws-config AWS_SHARED_CREDENTIALS_FILE=$work/home/aws-credentials
export HTTP_PROXY=http://127.0.0.1:$closed HTTPS_PROXY=http://127.0.0.1:$closed
export http_proxy=$HTTP_PROXY https_proxy=$HTTPS_PROXY NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
export SAM=$SAM SAM_CLI_TELEMETRY=0 DEPLOY_LOCAL_RUN=$run
# In its own process group, waited for: a signal reaches the trap at once,
# which stops the test and whatever it runs.
setsid "$GO" test -tags deploy -race -count=1 -v -timeout 30m ./test/deploy/ &
tests=$!
wait "$tests"

if [ -n "${DEPLOY_LOCAL_KEEP:-}" ]; then
	say "the stack stays up on $endpoint until Ctrl-C; send requests with curl --aws-sigv4 (the test printed one)"
	wait "$ministack"
fi
