#!/usr/bin/env bash
# Smoke test of the production image, run the way it is deployed: builds it, runs it on
# the example brain with a read-only root filesystem, the brain mounted read-only, a trace
# volume and a token file, then checks the probes, auth, one persona route and a clean
# SIGTERM. Not part of CI (it needs Docker); run it with `bash docker/smoke.sh`.
#
#   SMOKE_PORT     host port to use (default 18080; host networking)
#   SMOKE_IMAGE    tag to build and run (default context-compiler:smoke)
#   SMOKE_CONTEXT  build context (default the repository)
#   SMOKE_BRAIN    brain to mount (default examples/brain)
#   SMOKE_BUILD=0  reuse an existing SMOKE_IMAGE instead of building
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
context=${SMOKE_CONTEXT:-$repo}
brain=$(cd "${SMOKE_BRAIN:-$repo/examples/brain}" && pwd)
image=${SMOKE_IMAGE:-context-compiler:smoke}
port=${SMOKE_PORT:-18080}
name=cc-smoke-$$
volume=cc-smoke-traces-$$
work=$(mktemp -d "${TMPDIR:-/tmp}/cc-smoke.XXXXXX")
base=http://127.0.0.1:$port
results=()
failures=0

pass() { results+=("PASS  $1"); echo "PASS  $1"; }
fail() { results+=("FAIL  $1"); failures=$((failures + 1)); echo "FAIL  $1"; }
check() { if [ "$2" = "$3" ]; then pass "$1"; else fail "$1 (expected $3, got $2)"; fi; }

cleanup() {
  docker rm -f "$name" "$name-notoken" >/dev/null 2>&1
  docker volume rm -f "$volume" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

summary() {
  echo
  echo "== smoke summary ($image, port $port)"
  printf '%s\n' "${results[@]}"
  if [ "$failures" -eq 0 ]; then echo "SMOKE PASS (${#results[@]} checks)"; exit 0; fi
  echo "SMOKE FAIL ($failures of ${#results[@]} checks failed)"
  exit 1
}

# GET $1 with optional extra curl args; sets status, ctype and body.
get() {
  local url=$1; shift
  status=$(curl -s --max-time 10 -o "$work/body" -D "$work/headers" -w '%{http_code}' "$@" "$base$url") || status=000
  ctype=$(awk 'tolower($1)=="content-type:" {sub(/\r$/, ""); print $2}' "$work/headers" 2>/dev/null | tr -d ';')
  body=$(cat "$work/body" 2>/dev/null)
}

# A JSON field of $body, read with node (no jq needed).
field() {
  printf '%s' "$body" | node -e '
    let text = ""; process.stdin.on("data", (c) => (text += c)).on("end", () => {
      try { const v = JSON.parse(text)[process.argv[1]]; process.stdout.write(typeof v === "string" ? v : JSON.stringify(v ?? null)); }
      catch { process.stdout.write("<not json>"); }
    });' "$1"
}

# A machine without registry access names a script that starts dockerd and loads node:24-slim
# (SMOKE_PREPARE); the sandboxes this project is built in keep theirs beside the repository.
tool="${SMOKE_PREPARE:-$repo/../shared/tools/local-node-image.sh}"
if { ! docker info >/dev/null 2>&1 || ! docker image inspect node:24-slim >/dev/null 2>&1; } && [ -f "$tool" ]; then
  echo "== preparing Docker with $tool"
  bash "$tool" || { fail "local Docker daemon and node:24-slim (see /tmp/dockerd.log)"; summary; }
fi
docker info >/dev/null 2>&1 || { fail "docker daemon reachable"; summary; }
for command in curl node; do
  command -v "$command" >/dev/null || { fail "$command available on the host"; summary; }
done

if [ "${SMOKE_BUILD:-1}" = 0 ] && docker image inspect "$image" >/dev/null 2>&1; then
  echo "== using the existing $image (SMOKE_BUILD=0)"
else
  echo "== building $image from $context"
  DOCKER_BUILDKIT=0 docker build --force-rm --network host -t "$image" "$context" >"$work/build.log" 2>&1 \
    || { tail -n 25 "$work/build.log"; fail "image builds"; summary; }
  pass "image builds ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1 / 1e6}'))"
fi
check "image runs as user node" "$(docker image inspect -f '{{.Config.User}}' "$image")" "node"
check "image CMD is node, not npm" "$(docker image inspect -f '{{json .Config.Cmd}}' "$image")" '["node","dist/src/server.js"]'

if curl -s -o /dev/null --max-time 2 "$base/"; then
  fail "port $port is free (something already answers there; set SMOKE_PORT)"
  summary
fi

echo "== refusing a public bind without a token"
refusal=$(timeout 60 docker run --rm --name "$name-notoken" --network host -e PORT="$port" "$image" 2>&1)
code=$?
check "exits 78 without a token on HOST=0.0.0.0" "$code" "78"
if grep -q CONTEXT_COMPILER_TOKENS <<<"$refusal"; then pass "the refusal names CONTEXT_COMPILER_TOKENS"; else fail "the refusal names CONTEXT_COMPILER_TOKENS: $refusal"; fi

echo "== starting $name (read-only rootfs, brain :ro, trace volume, token file)"
token=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '# smoke token\n%s\n' "$token" >"$work/tokens"
chmod 0644 "$work/tokens" # the container's uid 1000 reads it; $work itself stays 0700
docker volume create "$volume" >/dev/null
if ! docker run -d --name "$name" --network host \
  --read-only --cap-drop ALL --security-opt no-new-privileges --ulimit nofile=4096:4096 \
  -e PORT="$port" -e BRAIN_ROOT=/brain -e CONTEXT_COMPILER_TOKENS_FILE=/run/secrets/context-compiler-tokens \
  -v "$brain:/brain:ro" \
  -v "$work/tokens:/run/secrets/context-compiler-tokens:ro" \
  -v "$volume:/var/lib/context-compiler/traces" \
  "$image" >/dev/null; then
  fail "container starts"
  summary
fi

health=starting
for second in $(seq 1 60); do
  health=$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{end}}' "$name" 2>/dev/null)
  running=$(docker inspect -f '{{.State.Running}}' "$name" 2>/dev/null)
  [ "$health" = healthy ] || [ "$running" != true ] && break
  sleep 1
done
if [ "$health" = healthy ]; then
  pass "Docker HEALTHCHECK reports healthy (after ${second}s)"
else
  fail "Docker HEALTHCHECK reports healthy (status ${health:-none}, running ${running:-?})"
  docker logs --tail 20 "$name" 2>&1
  summary
fi

get /healthz
check "GET /healthz is 200" "$status" "200"
get /readyz
check "GET /readyz is 200" "$status" "200"
check "GET /readyz says ready (brain readable, trace volume writable)" "$(field status)" "ready"
get /metrics
check "GET /metrics without a token is 401" "$status" "401"
check "the 401 is application/problem+json" "$ctype" "application/problem+json"
get /metrics -H "Authorization: Bearer $token"
check "GET /metrics with the token is 200" "$status" "200"

get /context/mars -H "Authorization: Bearer $token"
if [ "$status" != 200 ]; then
  fail "GET /context/mars with the token is 200 (got $status $(field code))"
else
  pass "GET /context/mars with the token is 200"
  check "GET /context/mars is application/json" "$ctype" "application/json"
  prompt_bytes=$(field systemPrompt | wc -c)
  if [ "$prompt_bytes" -gt 0 ]; then pass "GET /context/mars has a systemPrompt ($prompt_bytes bytes)"; else fail "GET /context/mars has a systemPrompt"; fi
  files=$(docker exec "$name" node -e 'console.log(require("node:fs").readdirSync(process.env.TRACE_DIR).length)' 2>/dev/null)
  if [ "${files:-0}" -gt 0 ]; then pass "the run was traced on the volume ($files files)"; else fail "the run was traced on the volume (no files in TRACE_DIR)"; fi
fi

echo "== stopping with SIGTERM"
docker stop -t 30 "$name" >/dev/null
check "exits 0 after SIGTERM" "$(docker inspect -f '{{.State.ExitCode}}' "$name")" "0"
logs=$(docker logs "$name" 2>&1)
if grep -q '"shutting down"' <<<"$logs"; then pass "logs a graceful shutdown"; else fail "logs a graceful shutdown"; fi
if grep -qF "$token" <<<"$logs"; then fail "the token never appears in the logs"; else pass "the token never appears in the logs"; fi
warnings=$(grep -cE '"level":(40|50|60)' <<<"$logs")
echo "NOTE  $warnings log lines at warn level or above"
[ "$warnings" -eq 0 ] || grep -E '"level":(40|50|60)' <<<"$logs" | head -n 5

summary
