#!/bin/bash
# Runs inside the container that scripts/test-systemd boots, as root under a real systemd (PID 1):
# installs the package and checks it as an operator would, through the installed units and curl
# on loopback. /mnt/aios (read-only) holds the .deb and this directory. One line per check, then
# "N passed, M failed"; exits non-zero when a check failed.
set -uo pipefail
share=/mnt/aios
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok      $*"; }
bad() { failed=$((failed + 1)); echo "FAILED  $*"; }
note() { echo "note    $*"; }
check() {
  local name=$1
  shift
  if "$@"; then ok "$name"; else bad "$name"; fi
}
finish() {
  if [ "$failed" -gt 0 ]; then
    # What the daemons said went wrong, for the post-mortem of a red run.
    echo "--- warnings and errors of the units (last 60) ---"
    journalctl -q -o cat -p warning "${UNITS[@]/#/-u}" 2>/dev/null | tail -n 60
  fi
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}

API=http://127.0.0.1:18940
BRIDGE=http://127.0.0.1:18892
REBIND=http://127.0.0.1:18942
UNITS=(aios-agent-task-api aios-agent-task-execution-rebind aios-external-agent-executor
  aios-agent-runtime-broker aios-online-agent-worker aios-hermes-online-agent-worker
  aios-openclaw-online-agent-worker)
WRITER='["git.read","git.test","governed.write.branch","governed.write.file"]'
EXCHANGE=/var/lib/aios-external-agent-executor
REPO=/data/aios-gitops/repo.git
TOKEN_FILE=/etc/aios-gitops/agent-task-control.token
AGENT_CREDENTIAL=/etc/credstore.encrypted/aios-online-agent-worker-20260815/agent_token

# --- install -----------------------------------------------------------------------------------
export DEBIAN_FRONTEND=noninteractive
deb=$(ls "$share"/aios-online-agent-runtime_*.deb)
if ! apt-get install -y -q --no-install-recommends "$deb" >/var/log/aios-install.log 2>&1; then
  tail -n 20 /var/log/aios-install.log
  bad "apt-get install $(basename "$deb")"
  finish
fi
ok "apt-get install $(basename "$deb")"
users() { getent passwd aios-agent-task aios-engineering-worker aios-engineering-executor >/dev/null; }
check "sysusers created the three service users" users
check "tmpfiles created the exchange and state directories" \
  test -d $EXCHANGE/requests -a -d /var/lib/aios-agent-task -a -d /data/aios-gitops
check "the seven daemons' units and the sandbox socket are installed and none is enabled" \
  bash -c '[ "$(systemctl list-unit-files "aios-*" --no-legend | grep -c disabled)" -eq 8 ]'

# --- credentials, profiles and the authority repository, as docs/operations.md tells ----------
install -d -m 0700 /etc/aios-gitops
openssl rand -hex 32 >$TOKEN_FILE && chmod 600 $TOKEN_FILE
OWNER=$(cat $TOKEN_FILE)
echo 'AIOS_AGENT_TASK_EXECUTION_REBIND_AUTHORIZATION_ID=owner-execution-rebind-20260818' \
  >/etc/aios-gitops/agent-task-execution-rebind.env
chmod 600 /etc/aios-gitops/agent-task-execution-rebind.env
install -d -m 0700 /data/agent/secrets
provider_key="sk-systemd-$(openssl rand -hex 16)"
echo "ONEAPI_REGULAR_TOKEN=$provider_key" >/data/agent/secrets/oneapi-model-ready.env
chmod 600 /data/agent/secrets/oneapi-model-ready.env
# A stand-in agent under each runtime's executable root (the paths the executor unit mounts).
install -D -m 0755 "$share/tests/systemd/fake-agent" /opt/aios-hermes-agent/bin/fake-agent
install -D -m 0755 "$share/tests/systemd/fake-agent" /opt/aios/openclaw-engineering/bin/fake-agent
for runtime in hermes openclaw; do
  executable=/opt/aios-hermes-agent/bin/fake-agent
  [ $runtime = openclaw ] && executable=/opt/aios/openclaw-engineering/bin/fake-agent
  jq -n --arg runtime $runtime --arg executable $executable '{
    schema: "aios.external-agent-runtime.profile.v1", runtime: $runtime, argv: [$executable],
    credential_env: {OPENAI_API_KEY: {credential: "aios-external-agent-oneapi-env",
                                      format: "dotenv", key: "ONEAPI_REGULAR_TOKEN"}},
    input_mode: "stdin_json", output_mode: "stdout_json", timeout_seconds: 60,
    max_output_bytes: 65536, validated_version: "1.0.0"}
    # The OpenClaw runs are bounded as a whole (the hog and fill tasks below pass the bounds).
    + if $runtime == "openclaw" then {limits: {memory_mb: 256, processes: 64, file_size_mb: 128,
      disk_mb: 64}} else {} end' >/etc/aios/external-agent-runtime.d/$runtime.json
done
seed=/var/tmp/seed
install -d -o aios-agent-task -g aios-agent-task $seed
as_task() { runuser -u aios-agent-task -- env HOME=$seed "$@"; }
as_task git init -q --bare $REPO
as_task git init -q -b main $seed/tree
mkdir -p $seed/tree/src && cat >$seed/tree/src/fleet.py <<'PY'
def claim(lease, capacity):
    """Claim the next task under a lease when the fleet has capacity."""
    return lease if capacity > 0 else None
PY
echo "# systemd test repository" >$seed/tree/README.md
# The deterministic task's verification (inline code such as python3 -c is refused).
cat >$seed/tree/check_note.py <<'PY'
import pathlib, sys
sys.exit(0 if pathlib.Path("docs/SYSTEMD-NOTE.md").is_file() else 1)
PY
chown -R aios-agent-task:aios-agent-task $seed/tree
as_task git -C $seed/tree add -A
as_task git -C $seed/tree -c user.name=operator -c user.email=operator@aios.invalid \
  commit -q -m "base"
as_task git -C $seed/tree push -q $REPO main
BASE=$(git --git-dir=$REPO rev-parse main)

# --- start every unit ------------------------------------------------------------------------
check "systemctl start aios-agent-task-api (Type=notify: returns once it serves)" \
  systemctl start aios-agent-task-api
check "the Task API and the Bridge answer /health" bash -c "curl -sf -o /dev/null $API/health && curl -sf -o /dev/null $BRIDGE/health"
owner() {
  local method=$1 url=$2
  shift 2
  curl -sS -X "$method" -H "Authorization: Bearer $OWNER" -H 'Content-Type: application/json' \
    "$@" "$url"
}
agent_token=$(owner POST $API/v1/agents -d "{\"agent_id\":\"online-fleet\",\"granted_capabilities\":
  [\"git.read\",\"git.test\",\"governed.write.branch\",\"governed.write.file\",
   \"agent.runtime.hermes\",\"agent.runtime.openclaw\"]}" | jq -r .token)
install -d -m 0700 "$(dirname $AGENT_CREDENTIAL)"
# (2>/dev/null: systemd-creds warns that a container's host key is not on encrypted media.)
encrypt_agent_token() {
  printf %s "$1" | systemd-creds encrypt --name=agent_token - $AGENT_CREDENTIAL 2>/dev/null
}
check "the owner issued an agent token and systemd-creds encrypted it for the workers" \
  encrypt_agent_token "$agent_token"
for unit in "${UNITS[@]:1}"; do
  check "systemctl start $unit" systemctl start "$unit"
done
all_active() {
  local unit
  for unit in "${UNITS[@]}"; do
    [ "$(systemctl is-active "$unit")" = active ] || { echo "  $unit: $(systemctl is-active "$unit")"; return 1; }
  done
}
check "every unit is active" all_active
no_failed() { [ -z "$(systemctl list-units --failed --no-legend 'aios-*')" ]; }
check "no unit failed" no_failed
reloaded() {
  local pid
  pid=$(systemctl show -p MainPID --value aios-agent-task-api)
  systemctl reload aios-agent-task-api || return 1
  for _ in $(seq 50); do
    journalctl -u aios-agent-task-api --no-pager -o cat | grep -q RELOAD_IGNORED && break
    sleep 0.1
  done
  journalctl -u aios-agent-task-api --no-pager -o cat | grep -q RELOAD_IGNORED &&
    [ "$(systemctl show -p MainPID --value aios-agent-task-api)" = "$pid" ] &&
    [ "$(systemctl is-active aios-agent-task-api)" = active ]
}
check "systemctl reload aios-agent-task-api: SIGHUP rereads TLS files (none here), same process" \
  reloaded
# aiosctl doctor on the installed host: nothing to fix; then a stopped unit is named with its fix.
doctor_clean() {
  local found
  found=$(aiosctl doctor 2>&1) || { echo "$found"; return 1; }
  grep -q "agent CLI hermes *ok *answers fake-agent 1.0.0" <<<"$found" &&
    grep -q "^units *ok" <<<"$found" && ! grep -q FAIL <<<"$found" || { echo "$found"; return 1; }
}
check "aiosctl doctor: services, token, store, units, credentials, disk, profiles, CLIs all ok" \
  doctor_clean
doctor_finds() {
  local found code
  systemctl stop aios-agent-task-execution-rebind
  found=$(aiosctl doctor 2>&1)
  code=$?
  systemctl start aios-agent-task-execution-rebind
  [ "$code" -eq 8 ] && grep -q "service: rebind service *FAIL .*systemctl status aios-agent-task-execution-rebind" <<<"$found" ||
    { echo "exit $code"; echo "$found"; return 1; }
}
check "aiosctl doctor: the stopped rebind service is a FAIL with its fix, exit 8" doctor_finds

# --- the main job through the installed units ----------------------------------------------------
binding() {
  jq -n --arg id "$1" --arg base "$BASE" '{task_id: $id, job_id: ("job-" + $id),
    repository: "aios/aios", base_oid: $base, expected_branch_oid: $base,
    target_branch: ("agent/" + $id), branch_mode: "CREATE_NEW", generation: 1,
    idempotency_key: ($id + "-v1")}'
}
create() { # create ID BODY-JSON: the task is QUEUED, or the answer is shown
  local answer
  answer=$(owner POST $API/v1/tasks -d "$(jq -n --arg id "$1" --argjson binding "$(binding "$1")" \
    --argjson body "$2" '{task_id: $id, binding: $binding} + $body')")
  [ "$(jq -r .status <<<"$answer")" = QUEUED ] && return 0
  bad "create $1: $answer"
  return 1
}
view() { owner GET "$API/v1/tasks/$1"; }
status_of() { view "$1" | jq -r .status; }
wait_status() { # wait_status ID STATUS [SECONDS]
  local deadline=$((SECONDS + ${3:-60}))
  while [ $SECONDS -lt $deadline ]; do
    [ "$(status_of "$1")" = "$2" ] && return 0
    sleep 0.3
  done
  echo "  $1 is $(status_of "$1"), not $2; what the workers logged about it:"
  journalctl -q -o cat -u 'aios-*worker*' | grep -F "\"$1\"" | grep -v TASK_CHECKPOINT | tail -5
  return 1
}
verify() { # verify ID DECISION
  local revision
  revision=$(view "$1" | jq .revision)
  owner POST "$API/v1/tasks/$1/verification" \
    -d "{\"expected_revision\":$revision,\"decision\":\"$2\",\"reason\":\"checked by test-systemd\"}" >/dev/null
}
succeeds() { # the worker's result, the owner's PASS, SUCCEEDED
  wait_status "$1" VERIFYING "${2:-60}" || return 1
  [ "$(view "$1" | jq -r .result.status)" = SUCCEEDED ] || { view "$1" | jq -c .result; return 1; }
  verify "$1" PASS && wait_status "$1" SUCCEEDED 10
}
agent_task() { # agent_task ID RUNTIME GOAL
  create "$1" "$(jq -n --arg runtime "$2" --arg goal "$3" '{goal: $goal,
    required_capabilities: ["agent.runtime." + $runtime],
    execution: {action: "agent_runtime", adapter: $runtime}}')"
}
answered() { # the agent's answer reached the result, and the model key reached only the agent
  local result
  result=$(view "$1" | jq -c .result)
  [ "$(jq -r .output_json.answer <<<"$result")" = "fake agent answered: $2" ] &&
    [ "$(jq -r .output_json.provider_key_sha256 <<<"$result")" = "$(printf %s "$provider_key" | sha256sum | cut -d' ' -f1)" ] &&
    ! grep -qF "$provider_key" <<<"$result"
}

agent_task sd-hermes hermes "Summarize the repository"
agent_task sd-openclaw openclaw "List the daemons"
create sd-capture '{"goal": "Map the fleet interface", "required_capabilities": ["git.read"],
  "execution": {"action": "source_capture", "adapter": "compact_interface_map",
  "capability_scope": ["git.read"], "source_signals": ["fleet lease claim capacity"]}}'
create sd-deterministic "$(jq -n --argjson writer "$WRITER" '{goal: "Add the systemd note",
  execution: {action: "deterministic", adapter: "deterministic", capability_scope: $writer,
    change_set: [{path: "docs/SYSTEMD-NOTE.md", operation: "write_file",
                  content: "Committed through the governed Bridge under systemd.\n"}],
    verification: [{label: "note exists", argv: ["/usr/bin/python3", "check_note.py"],
      cwd: ".", timeout_seconds: 30}]}}')"
create sd-rebind '{"goal": "Capture, then rework into a change", "required_capabilities": ["git.read"],
  "execution": {"action": "source_capture", "adapter": "source_capture",
  "capability_scope": ["git.read"], "source_signals": ["execution rebind digest"]}}'

for runtime in hermes openclaw; do
  check "agent_runtime on $runtime: SUCCEEDED" succeeds sd-$runtime
  check "agent_runtime on $runtime: the agent's answer, the provider key only in the agent" \
    answered sd-$runtime "$([ $runtime = hermes ] && echo 'Summarize the repository' || echo 'List the daemons')"
done
check "source_capture: SUCCEEDED" succeeds sd-capture
check "deterministic: SUCCEEDED" succeeds sd-deterministic
dashboard_shows() {
  local head board
  head=$(curl -sf -D - -o /dev/null $API/ui/) || return 1
  grep -qi "^content-security-policy: default-src 'none'" <<<"$head" || { echo "$head"; return 1; }
  board=$(owner GET $API/v1/dashboard) || return 1
  [ "$(jq '[.recent[] | select(.task_id | startswith("sd-")) | select(.status == "SUCCEEDED")] | length' <<<"$board")" -ge 4 ] &&
    [ "$(jq '.fleet.workers | length' <<<"$board")" -ge 3 ] || { echo "$board" | head -c 2000; return 1; }
}
check "the dashboard: /ui/ under its CSP, and GET /v1/dashboard shows the tasks SUCCEEDED and the workers" \
  dashboard_shows
committed() { # committed BRANCH PATH CONTENT-PREFIX
  local oid
  oid=$(view "${1#agent/}" | jq -r .result.commit_oid)
  [ "$(git --git-dir=$REPO rev-parse "$1")" = "$oid" ] &&
    [ "$(git --git-dir=$REPO rev-parse "$1^")" = "$BASE" ] &&
    git --git-dir=$REPO show "$1:$2" | grep -q "^$3"
}
check "deterministic: the governed commit is on agent/sd-deterministic in the authority repository" \
  committed agent/sd-deterministic docs/SYSTEMD-NOTE.md "Committed through the governed Bridge"

accepted() { # accepted N: the sandbox socket has started exactly N instances
  local count
  count=$(systemctl show -p NAccepted --value aios-verification-sandbox.socket)
  [ "$count" = "$1" ] || { echo "  NAccepted=$count"; return 1; }
}
check "deterministic: its verification ran in the sandbox service (the worker's unit builds no sandbox)" \
  accepted 1

# --- a hostile verification command, under the units -------------------------------------------
# The plan writes tests/security/escape_agent.py into the tree and runs it as its verification:
# it knows the worker's credentials, checkpoints and state, the exchange, the control-plane
# ports and the sandbox service's socket, and tries each. (Not a listing of the worker's state
# root: its own run directory lies below it, so it sees the empty directories leading there.)
WORKER_STATE=/var/lib/aios-online-agent-worker
escape_known=$(jq -nc --arg repo $REPO --arg exchange $EXCHANGE --arg state $WORKER_STATE '{
  marker: "aios-sd-verify-escape",
  secrets: ["/run/credentials/aios-online-agent-worker.service/agent_token",
            "/run/credentials/aios-online-agent-worker.service/exchange_result_key",
            ($state + "/checkpoints.sqlite3"), "/etc/credstore/aios-exchange-result.key",
            "/etc/aios-gitops/agent-task-control.token", "/data/agent/secrets/oneapi-model-ready.env"],
  listings: [$repo, $exchange, "/etc/credstore", "/run/credentials"],
  writes: [($repo + "/refs/heads/escaped"), ($exchange + "/results/forged.json"), ($state + "/escaped")],
  connects: ["127.0.0.1:18940", "127.0.0.1:18892", "127.0.0.1:18942"],
  unix_connects: ["/run/aios-verification/sandbox.sock"], survive: true, groups: true}')
create sd-verify-escape "$(jq -n --argjson writer "$WRITER" --arg known "$escape_known" \
  --rawfile escape "$share/tests/security/escape_agent.py" '{goal: "A hostile verification",
  execution: {action: "deterministic", adapter: "deterministic", capability_scope: $writer,
    change_set: [{path: "escape.py", operation: "write_file", content: $escape}],
    verification: [{label: "hostile", argv: ["/usr/bin/python3", "escape.py", $known],
      cwd: ".", timeout_seconds: 60}]}}')"
escape_report() {
  view sd-verify-escape | jq -r '.result.tests[0].output' | grep -o '{"escapes".*' | tail -1
}
escapes_refused() { # every escape but writes and survive (decided on the host) was refused
  local report allowed
  wait_status sd-verify-escape VERIFYING 90 || return 1
  report=$(escape_report)
  [ "$(jq '.escapes | length' <<<"$report")" -gt 10 ] || { echo "  report: $report"; return 1; }
  allowed=$(jq -r '.escapes | to_entries[] | select((.key | startswith("write:") or . == "survive") | not)
    | select(.value | startswith("refused:") | not) | "\(.key) \(.value)"' <<<"$report")
  [ -z "$allowed" ] || { echo "  allowed: $allowed"; return 1; }
}
nothing_written() {
  [ ! -e $REPO/refs/heads/escaped ] && [ ! -e $EXCHANGE/results/forged.json ] &&
    [ ! -e $WORKER_STATE/escaped ] && ! pgrep -f aios-sd-verify-escape-survivor >/dev/null
}
check "hostile verification: no credential, checkpoint, exchange, repository, port, socket or group reached" \
  escapes_refused
check "hostile verification: nothing written outside its sandbox, nothing outlives it" nothing_written
check "hostile verification: its own connect to the socket started no instance (one each, two in all)" \
  accepted 2
passed_verification() { [ "$(view sd-verify-escape | jq -r '.result.tests[0].passed')" = true ]; }
check "hostile verification: the command itself ran to its end (its report is its output)" \
  passed_verification

rework() {
  wait_status sd-rebind VERIFYING 60 || return 1
  # The plan first: once it is registered, a worker polling the returned task finds the drift
  # and leaves it alone instead of claiming the capture again before the owner rebinds it.
  local plan view_json body answer
  plan=$(owner POST $BRIDGE/v2/plans -d '{"task_id": "sd-rebind", "change_set": [{"path":
    "docs/REBOUND-NOTE.md", "operation": "write_file", "content": "Rebound under systemd.\n"}]}')
  verify sd-rebind NEEDS_REWORK && wait_status sd-rebind QUEUED 10 || return 1
  view_json=$(view sd-rebind)
  body=$(jq -n --argjson view "$view_json" --argjson plan "$plan" \
    --arg verification "$(jq -c .verification <<<"$view_json" | aios-envelope digest)" '{
      expected_status: $view.status, expected_revision: $view.revision,
      expected_attempt: $view.attempt, previous_verification_sha256: $verification,
      expected_old_execution_digest: $view.execution_digest,
      expected_new_execution_digest: $plan.execution_digest,
      authorization_id: "owner-execution-rebind-20260818", idempotency_key: "test-systemd-rebind-1",
      reason: "plan registered after projection"}')
  answer=$(owner POST $REBIND/v1/tasks/sd-rebind/execution-rebind -d "$body")
  [ "$(jq -r .new_execution_digest <<<"$answer")" = "$(jq -r .execution_digest <<<"$plan")" ] ||
    { echo "  rebind answered $answer"; return 1; }
}
check "NEEDS_REWORK, then the owner's rebind through the rebind unit" rework
check "rebound: SUCCEEDED" succeeds sd-rebind
check "rebound: the plan's governed commit is in the authority repository" \
  committed agent/sd-rebind docs/REBOUND-NOTE.md "Rebound under systemd"

# --- faults ----------------------------------------------------------------------------------------
main_pid() { systemctl show -p MainPID --value "$1"; }
runs_of() { # how many times the executor ran the agent for a task's request
  local request
  request=$(view "$1" | jq -r .result.external_request_id)
  journalctl -q -o cat -u aios-external-agent-executor | grep -c "EXTERNAL_AGENT_REQUEST_SUCCEEDED.*\"$request.json\""
}
started_runs() { find $EXCHANGE/started -name '*.json' | wc -l; }
wait_started() { # wait until the executor has started one more run than $1
  local deadline=$((SECONDS + 30))
  while [ $SECONDS -lt $deadline ]; do
    [ "$(started_runs)" -gt "$1" ] && return 0
    sleep 0.2
  done
  return 1
}
restarted() { # restarted UNIT OLD-PID SECONDS: active again under a new main process
  local deadline=$((SECONDS + $3))
  while [ $SECONDS -lt $deadline ]; do
    local pid
    pid=$(main_pid "$1")
    [ "$(systemctl is-active "$1")" = active ] && [ "$pid" != 0 ] && [ "$pid" != "$2" ] && return 0
    sleep 0.3
  done
  return 1
}

before=$(started_runs)
agent_task sd-kill hermes "sleep 4 while the scheduler is killed"
check "kill -9: the agent started" wait_started "$before"
pid=$(main_pid aios-agent-task-api)
kill -9 "$pid"
check "kill -9 the scheduler mid-run: systemd restarts it" restarted aios-agent-task-api "$pid" 20
check "kill -9 the scheduler mid-run: the workers carry on to SUCCEEDED" succeeds sd-kill 60
check "kill -9 the scheduler mid-run: the agent ran once" bash -c "[ $(runs_of sd-kill) -eq 1 ]"

before=$(started_runs)
agent_task sd-drain hermes "sleep 4 while its worker and executor are stopped"
check "systemctl stop: the agent started" wait_started "$before"
stopped_cleanly() {
  systemctl stop aios-hermes-online-agent-worker aios-external-agent-executor || return 1
  local unit
  for unit in aios-hermes-online-agent-worker aios-external-agent-executor; do
    [ "$(systemctl show -p Result --value $unit)" = success ] &&
      [ "$(systemctl show -p ExecMainStatus --value $unit)" = 0 ] ||
      { echo "  $unit: $(systemctl show -p Result -p ExecMainStatus $unit | tr '\n' ' ')"; return 1; }
  done
}
check "systemctl stop drains the worker and the executor (exit 0)" stopped_cleanly
check "systemctl start brings them back" \
  systemctl start aios-external-agent-executor aios-hermes-online-agent-worker
check "systemctl stop: the task is not lost (SUCCEEDED)" succeeds sd-drain 60
check "systemctl stop: the agent ran once" bash -c "[ $(runs_of sd-drain) -eq 1 ]"

# The watchdog: a drop-in shortens the rebind unit's WatchdogSec so the test waits seconds.
mkdir -p /etc/systemd/system/aios-agent-task-execution-rebind.service.d
printf '[Service]\nWatchdogSec=4s\n' \
  >/etc/systemd/system/aios-agent-task-execution-rebind.service.d/watchdog.conf
systemctl daemon-reload
systemctl restart aios-agent-task-execution-rebind
pid=$(main_pid aios-agent-task-execution-rebind)
kill -STOP "$pid"
check "watchdog: a SIGSTOPped rebind service is restarted" \
  restarted aios-agent-task-execution-rebind "$pid" 30
check "watchdog: the journal says the watchdog fired" bash -c \
  "journalctl -q -u aios-agent-task-execution-rebind | grep -qi 'watchdog timeout'"
rm -r /etc/systemd/system/aios-agent-task-execution-rebind.service.d
systemctl daemon-reload

fails_with() { # fails_with UNIT STATUS JOURNAL-TEXT: a start fails, with that exit status
  systemctl reset-failed "$1" 2>/dev/null
  local since
  since=$(date '+%Y-%m-%d %H:%M:%S')
  sleep 1
  systemctl start "$1" 2>/dev/null && { echo "  $1 started"; return 1; }
  local status
  status=$(systemctl show -p ExecMainStatus --value "$1")
  [ "$status" = "$2" ] || { echo "  $1 exit status $status, not $2"; return 1; }
  [ -z "$3" ] || journalctl -q -u "$1" --since "$since" | grep -qF "$3" ||
    { echo "  the journal of $1 does not name $3"; return 1; }
}
systemctl stop aios-agent-task-execution-rebind
mv $TOKEN_FILE $TOKEN_FILE.away
check "a missing credential fails the rebind unit before its daemon starts (243/CREDENTIALS)" \
  fails_with aios-agent-task-execution-rebind 243 ""
echo too-short >$TOKEN_FILE && chmod 600 $TOKEN_FILE
check "a too-short control token fails the rebind unit with TASK_EXECUTION_REBIND_CONTROL_CREDENTIAL_INVALID" \
  fails_with aios-agent-task-execution-rebind 69 TASK_EXECUTION_REBIND_CONTROL_CREDENTIAL_INVALID
mv $TOKEN_FILE.away $TOKEN_FILE
systemctl reset-failed aios-agent-task-execution-rebind
check "the restored credential starts it again" systemctl start aios-agent-task-execution-rebind

systemctl stop aios-online-agent-worker
cp $AGENT_CREDENTIAL $AGENT_CREDENTIAL.good
encrypt_agent_token short
check "a too-short agent token fails the worker unit with WORKER_AGENT_TOKEN_INVALID" \
  fails_with aios-online-agent-worker 69 WORKER_AGENT_TOKEN_INVALID
echo "not an encrypted credential" >$AGENT_CREDENTIAL
check "a malformed encrypted credential fails the worker unit before its daemon starts (243)" \
  fails_with aios-online-agent-worker 243 ""
mv $AGENT_CREDENTIAL.good $AGENT_CREDENTIAL
systemctl reset-failed aios-online-agent-worker
check "the restored agent token starts the worker again" systemctl start aios-online-agent-worker

# --- hardening, for real -----------------------------------------------------------------------------
agent_task sd-probe hermes "probe the sandbox"
check "probe: SUCCEEDED" succeeds sd-probe
probe=$(view sd-probe | jq -c .result.output_json)
denied() { # every attempt of a kind failed
  local allowed
  allowed=$(jq -r --arg kind "$1" '.[$kind] | to_entries[] | select(.value == "ALLOWED") | .key' <<<"$probe")
  [ -z "$allowed" ] || { echo "  allowed: $allowed"; return 1; }
  [ "$(jq --arg kind "$1" '.[$kind] | length' <<<"$probe")" -gt 0 ]
}
check "the agent child cannot write outside its directories under the executor unit" denied writes
check "the agent child cannot read the credentials, the control token or the task database" denied reads
check "the agent child cannot connect to the Task API, Bridge or rebind ports (its own network namespace)" denied connects
check "the agent child keeps none of the unit user's supplementary groups (CAP_SETGID dropped them)" denied groups
check "the agent child cannot make a user namespace (the sandbox's syscall filter)" denied syscalls
no_survivor() { ! pgrep -f aios-probe-survivor >/dev/null; }
check "nothing the agent child daemonised outlives its run (its own PID namespace)" no_survivor

# Whole-run bounds under the executor unit: four processes of 100 MiB each (each within its own
# RLIMIT_DATA) against memory_mb 256, and 128 MiB in files of 16 MiB against disk_mb 64.
agent_task sd-hog openclaw "hog 4x100"
agent_task sd-fill openclaw "fill 128"
ended_by() { # ended_by ID CODE: the worker gave the task back with the bound's code
  local i
  for i in $(seq 90); do
    journalctl -q -o cat -u aios-openclaw-online-agent-worker | grep -F "\"$1\"" |
      grep -F TASK_FAILED | grep -qF "$2" && return 0
    sleep 1
  done
  return 1
}
check "an agent run over memory_mb as a whole ends with EXTERNAL_AGENT_MEMORY_LIMIT" \
  ended_by sd-hog EXTERNAL_AGENT_MEMORY_LIMIT
check "an agent run over disk_mb ends with EXTERNAL_AGENT_DISK_LIMIT" \
  ended_by sd-fill EXTERNAL_AGENT_DISK_LIMIT

# The units that build sandboxes for hostile children pay 0.9 for it (docs/security.md).
# CAP_SETGID, which drops the agent child's supplementary groups, costs the executor and the
# broker 0.3 more.
declare -A budget=([aios-agent-task-api]=1.0 [aios-agent-task-execution-rebind]=1.0
  [aios-external-agent-executor]=2.4 [aios-agent-runtime-broker]=2.4)
for unit in "${UNITS[@]}"; do
  score=$(systemctl show -p Id --value "$unit" >/dev/null &&
    systemd-analyze security --no-pager "$unit.service" 2>/dev/null |
    sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
  limit=${budget[$unit]:-1.5}
  check "systemd-analyze security $unit: ${score:-none} (budget $limit)" \
    awk -v s="${score:-99}" -v l="$limit" 'BEGIN { exit !(s <= l) }'
done

sandbox_score=$(systemd-analyze security --no-pager --offline=true \
  /usr/lib/systemd/system/aios-verification-sandbox@.service 2>/dev/null |
  sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
# It holds CAP_SETGID too (0.3) and cannot have PrivateUsers= (0.2), whose namespace denies the
# setgroups call that drops the verification child's groups.
check "systemd-analyze security aios-verification-sandbox@: ${sandbox_score:-none} (budget 2.0)" \
  awk -v s="${sandbox_score:-99}" 'BEGIN { exit !(s <= 2.0) }'

check "every unit is active at the end" all_active
check "no unit failed at the end" no_failed
finish
