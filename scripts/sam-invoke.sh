#!/usr/bin/env bash
# make sam-invoke FN=createproduct EVENT=events/create.json: one function
# through `sam local invoke` (Docker, the linux/arm64 bootstrap `sam build`
# makes), against a local DynamoDB-compatible store.
#
# - The store: the one `make run` starts when it listens where containers
#   reach it (`make run STORE_ADDR=<address below>`), so a second create
#   replays; otherwise a temporary embedded store on that address, stopped
#   afterwards. The address (SAM_STORE_ADDR) defaults to port 8000 on the
#   gateway of Docker's bridge network (172.17.0.1 on most Linux hosts),
#   never on every interface; with Docker Desktop, 127.0.0.1:8000, which
#   containers reach as host.docker.internal.
# - The function's variables: events/env/<FN>.json, with its endpoint
#   (AWS_ENDPOINT_URL) pointed at that store (for the relay, at
#   SAM_EVENTBRIDGE_URL when set). template.yaml declares no endpoint
#   variable and SAM passes a function only declared ones, so SAM invokes a
#   copy of the built template whose Globals declare AWS_ENDPOINT_URL.
# - The base image: scripts/sam-base-image.sh (the real one where a registry
#   answers, a local stand-in where none does).
# - Nothing leaves the machine: SAM's own AWS calls (STS, before every
#   invoke) and HTTPS requests (its weekly version check) go to a closed
#   loopback port, and SAM and the function get dummy credentials.
set -euo pipefail
cd "$(dirname "$0")/.."

fn=${1:?usage: sam-invoke.sh FN EVENT}
event=${2:?usage: sam-invoke.sh FN EVENT}
SAM=${SAM:-.venv/sam/bin/sam}
GO=${GO:-go}
say() { echo "sam-invoke: $*" >&2; }

case $fn in
createproduct) id=CreateProductFunction ;;
getproduct) id=GetProductFunction ;;
outboxrelay) id=OutboxRelayFunction ;;
sweeper) id=SweeperFunction ;;
*)
	say "no function $fn (createproduct, getproduct, outboxrelay or sweeper)"
	exit 2
	;;
esac
env_file=events/env/$fn.json
[ -f "$event" ] || { say "no event file $event"; exit 2; }
[ -f "$env_file" ] || { say "no env file $env_file"; exit 2; }
[ -x "$SAM" ] || { say "no sam CLI at $SAM (make sam-invoke installs it into .venv/sam)"; exit 2; }

# Docker, and a way to run linux/arm64 containers.
if ! command -v docker >/dev/null 2>&1; then
	say "needs Docker, and the docker CLI is not on PATH. Install Docker Desktop, or Docker Engine" \
		"(Debian: apt-get install docker.io). Without Docker, make invoke FN=$fn EVENT=$event runs the" \
		"same bootstrap under aws-lambda-rie."
	exit 1
fi
if ! engine=$(docker info --format '{{.Architecture}}|{{.OperatingSystem}}' 2>&1); then
	say "needs a running Docker engine, and docker info says: $engine." \
		"Start Docker Desktop, or dockerd (systemctl start docker). Without Docker, make invoke runs the" \
		"same bootstrap under aws-lambda-rie."
	exit 1
fi
engine_arch=${engine%%|*}
engine_os=${engine#*|}
desktop=false
[[ $engine_os == *"Docker Desktop"* ]] && desktop=true
if [ "$engine_arch" != aarch64 ] && [ "$desktop" = false ]; then
	binfmt=/proc/sys/fs/binfmt_misc/qemu-aarch64
	if ! grep -qx enabled "$binfmt" 2>/dev/null || ! grep -q '^flags:.*F' "$binfmt"; then
		say "the functions are linux/arm64 and this $engine_arch engine cannot run them: $binfmt is not" \
			"enabled with the F flag. Debian: apt-get install qemu-user-static binfmt-support;" \
			"mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc (if not mounted);" \
			"update-binfmts --enable qemu-aarch64."
		exit 1
	fi
fi

# Where the store listens, and how the function's container reaches it.
if [ "$desktop" = true ]; then
	default_host=127.0.0.1
else
	# The bridge's gateway: in its IPAM config when set, else the address
	# of its interface on this machine (a fresh dockerd records no gateway).
	default_host=$(docker network inspect bridge --format '{{range .IPAM.Config}}{{.Gateway}}{{end}}')
	if [ -z "$default_host" ]; then
		bridge=$(docker network inspect bridge --format '{{index .Options "com.docker.network.bridge.name"}}')
		default_host=$(ip -4 -o addr show dev "${bridge:-docker0}" 2>/dev/null | awk '{ split($4, a, "/"); print a[1]; exit }')
	fi
	[ -n "$default_host" ] || { say "found no address of Docker's bridge network on this machine; set SAM_STORE_ADDR"; exit 1; }
fi
store_addr=${SAM_STORE_ADDR:-$default_host:8000}
store_host=${store_addr%:*}
store_port=${store_addr##*:}
container_host=$store_host
if [ "$store_host" = 127.0.0.1 ] || [ "$store_host" = localhost ]; then
	if [ "$desktop" = false ]; then
		say "SAM_STORE_ADDR=$store_addr is on loopback, which the function's container cannot reach" \
			"on Docker Engine; use the bridge gateway, e.g. $default_host:$store_port"
		exit 1
	fi
	container_host=host.docker.internal
fi
store_url=http://$container_host:$store_port

pids=()
work=$(mktemp -d)
invoke_template=
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
	[ -z "$invoke_template" ] || rm -f "$invoke_template"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

listening() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
if listening "$store_host" "$store_port"; then
	say "using the store on $store_addr (make run's, or another already there)"
else
	mkdir -p bin/host
	"$GO" build -o bin/host/local ./cmd/local
	bin/host/local -addr "" -store-addr "$store_addr" >"$work/store.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 100); do
		listening "$store_host" "$store_port" && break
		kill -0 "${pids[0]}" 2>/dev/null || { cat "$work/store.log" >&2; say "the temporary store exited"; exit 1; }
		sleep 0.1
	done
	listening "$store_host" "$store_port" || { say "the temporary store did not listen on $store_addr"; exit 1; }
	say "started a temporary embedded store on $store_addr (stopped afterwards; keep one with make run STORE_ADDR=$store_addr)"
fi

# The env file, its endpoint pointed at the store (the relay's at
# SAM_EVENTBRIDGE_URL when set, else left as the file says).
endpoint=$store_url
[ "$fn" != outboxrelay ] || endpoint=${SAM_EVENTBRIDGE_URL:-}
python3 - "$env_file" "$id" "$endpoint" >"$work/env.json" <<'PY'
import json, sys
path, fid, endpoint = sys.argv[1:]
with open(path) as f:
    env = json.load(f)
if endpoint:
    env[fid]["AWS_ENDPOINT_URL"] = endpoint
json.dump(env, sys.stdout, indent=2)
PY

if ! "$SAM" build --build-in-source >"$work/build.log" 2>&1; then
	cat "$work/build.log" >&2
	say "sam build failed"
	exit 1
fi
# The copy SAM invokes: the built template, AWS_ENDPOINT_URL declared (empty)
# in its Globals. Beside the original, where its CodeUri paths resolve.
invoke_template=$(mktemp .aws-sam/build/template.sam-invoke.XXXXXX)
"$(dirname "$SAM")/python" - .aws-sam/build/template.yaml >"$invoke_template" <<'PY'
import json, sys, yaml
with open(sys.argv[1]) as f:
    tpl = yaml.safe_load(f)
env = tpl.setdefault("Globals", {}).setdefault("Function", {}).setdefault("Environment", {}).setdefault("Variables", {})
env.setdefault("AWS_ENDPOINT_URL", "")
json.dump(tpl, sys.stdout, indent=1)
PY
image=$(scripts/sam-base-image.sh)

# SAM's AWS calls and HTTPS requests go to a port nothing listens on.
closed=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export AWS_ENDPOINT_URL_STS=http://127.0.0.1:$closed AWS_ENDPOINT_URL=http://127.0.0.1:$closed
export HTTPS_PROXY=http://127.0.0.1:$closed https_proxy=http://127.0.0.1:$closed
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
unset HTTP_PROXY http_proxy AWS_PROFILE AWS_SESSION_TOKEN
export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1 SAM_CLI_TELEMETRY=0

# SAM's stderr (its log and the function's) goes to the terminal and to
# sam.err; its stdout (the function's answer) straight to stdout.
invoke() {
	{ "$SAM" local invoke "$id" --template "$invoke_template" --event "$event" \
		--env-vars "$work/env.json" --invoke-image "$image" --skip-pull-image 2>&1 1>&3 3>&- |
		tee "$work/sam.err" >&2; } 3>&1
}
start=$(date +%s%N)
invoke
# Under arm64 emulation SAM can post the event before the emulator in the
# container listens (Docker's userland proxy accepts for it), most often on
# the first invoke after SAM builds its image: the function never started,
# so invoking again is safe.
if grep -q 'No response from invoke container' "$work/sam.err" && ! grep -q '^START RequestId' "$work/sam.err"; then
	say "the function's container did not answer before SAM gave up (it never started the function); invoking again"
	start=$(date +%s%N)
	invoke
fi
say "$id with $event: $(((($(date +%s%N) - start) / 1000000))) ms (store $store_url, image $image)"
