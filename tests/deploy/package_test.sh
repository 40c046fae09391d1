#!/usr/bin/env bash
# Builds the .deb with CPack from this build tree, installs it with dpkg into a scratch root
# (maintainer scripts run chrootless against that root, as dpkg --root allows), and checks what
# an operator gets: the FHS layout, root-owned files no service can write, the service users,
# groups and directories, and units that `systemd-analyze verify` accepts with the binaries
# in place. Needs root (dpkg --root and chown); exit 77 (skipped) otherwise.
set -euo pipefail
build_dir=$1
if [ "$(id -u)" -ne 0 ]; then
  echo "package test: needs root for dpkg --root; skipped"
  exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/aios-package-XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

cpack --config "$build_dir/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" 2>&1 \
  || { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/out/*.deb)
echo "package: $(basename "$deb")"

# Contents: every entry root-owned, nothing group- or world-writable.
dpkg-deb -c "$deb" >"$work/contents"
awk '$2 != "root/root" { print "not root-owned: " $0 }' "$work/contents" >"$work/bad-owner"
awk 'substr($1, 6, 1) == "w" || substr($1, 9, 1) == "w" { print "writable: " $0 }' \
  "$work/contents" >"$work/bad-mode"
[ -s "$work/bad-owner" ] && fail "$(cat "$work/bad-owner")"
[ -s "$work/bad-mode" ] && fail "$(cat "$work/bad-mode")"

depends=$(dpkg-deb -f "$deb" Depends)
for needed in systemd procps libgit2 libsqlite3 libsystemd0 libssl3; do
  [[ "$depends" == *"$needed"* ]] || fail "Depends lacks $needed: $depends"
done
# Outputs are read whole before matching: under pipefail, `grep -q` leaving early kills the
# writer with SIGPIPE and fails a check that holds.
dpkg-deb -e "$deb" "$work/control"
for conffile in openclaw.profile.json hermes.profile.json hermes-home/config.yaml; do
  grep -qx "/etc/aios/external-agent-runtime.d/$conffile" "$work/control/conffiles" \
    || fail "conffiles lacks $conffile: $(cat "$work/control/conffiles" 2>&1)"
done

# Install into a scratch root with its own dpkg database.
root="$work/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/etc"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
# What every Debian base system has before this package: root, and systemd's own units.
echo 'root:x:0:0:root:/root:/bin/bash' >"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"
mkdir -p "$root/usr/lib/systemd"
cp -a /usr/lib/systemd/system "$root/usr/lib/systemd/system"
dpkg --root="$root" --force-script-chrootless --force-depends --log=/dev/null -i "$deb" \
  >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; exit 1; }
status=$(dpkg --root="$root" -s aios-online-agent-runtime)
grep -q '^Status: install ok installed' <<<"$status" \
  || fail "dpkg does not report the package installed"

for binary in aios-task-scheduler aios-agent-task-execution-rebind aios-external-agent-executor \
  aios-online-agent-worker aios-envelope aios-store aiosctl; do
  [ -x "$root/usr/bin/$binary" ] || fail "missing /usr/bin/$binary"
  sections=$(readelf -S --wide "$root/usr/bin/$binary" 2>&1 || true)
  [[ "$sections" != *.debug_info* ]] || fail "/usr/bin/$binary ships its debug information"
done
[ -f "$root/usr/share/man/man1/aiosctl.1" ] || fail "missing aiosctl's manual page"
[ -f "$root/usr/share/bash-completion/completions/aiosctl" ] || fail "missing aiosctl's completion"
man_page=$(cat "$root/usr/share/man/man1/aiosctl.1")
[[ "$man_page" == .TH\ AIOSCTL* && "$man_page" == *".SH EXIT STATUS"* ]] \
  || fail "aiosctl's manual page is not one"
bash -n "$root/usr/share/bash-completion/completions/aiosctl" || fail "aiosctl's completion is not bash"
version=$("$root/usr/bin/aios-task-scheduler" --version)
grep -q '^aios-task-scheduler ' <<<"$version" \
  || fail "the installed scheduler does not run"
units=(aios-agent-task-api aios-agent-task-execution-rebind aios-external-agent-executor
  aios-agent-runtime-broker aios-online-agent-worker aios-hermes-online-agent-worker aios-openclaw-online-agent-worker)
for unit in "${units[@]}"; do
  [ -f "$root/usr/lib/systemd/system/$unit.service" ] || fail "missing unit $unit"
done
for unit in aios-verification-sandbox.socket aios-verification-sandbox@.service; do
  [ -f "$root/usr/lib/systemd/system/$unit" ] || fail "missing unit $unit"
done
for file in usr/lib/tmpfiles.d/aios-agent-task.conf usr/lib/tmpfiles.d/aios-external-agent-runtime.conf \
  usr/lib/sysusers.d/aios-online-agent-runtime.conf etc/aios/external-agent-runtime.d/openclaw.profile.json \
  etc/aios/external-agent-runtime.d/hermes.profile.json \
  etc/aios/external-agent-runtime.d/hermes-home/config.yaml \
  usr/share/doc/aios-online-agent-runtime/operations.md \
  usr/share/doc/aios-online-agent-runtime/examples/agent-runtime-openclaw.conf.example \
  usr/share/doc/aios-online-agent-runtime/examples/agent-runtime-codex.conf.example; do
  [ -f "$root/$file" ] || fail "missing /$file"
done

# The postinst made the users, groups and memberships (sysusers) in the scratch root...
for user in aios-agent-task aios-engineering-worker aios-engineering-executor; do
  grep -q "^$user:" "$root/etc/passwd" || fail "no user $user"
done
grep -q '^gitops:.*:.*aios-engineering-worker' "$root/etc/group" || fail "worker not in gitops"
grep -q '^aios-executor-exchange:.*aios-engineering-executor' "$root/etc/group" \
  || fail "executor not in aios-executor-exchange"

# ... and the service directories (tmpfiles), owned by their service with the right mode.
owner_and_mode() {
  local path=$1 uid gid
  uid=$(stat -c %u "$root$path")
  gid=$(stat -c %g "$root$path")
  echo "$(awk -F: -v id="$uid" '$3 == id { print $1 }' "$root/etc/passwd"):$(awk -F: -v id="$gid" \
    '$3 == id { print $1 }' "$root/etc/group") $(stat -c %a "$root$path")"
}
expect_dir() {
  [ -d "$root$1" ] || { fail "missing directory $1"; return; }
  local got
  got=$(owner_and_mode "$1")
  [ "$got" = "$2" ] || fail "$1 is $got, expected $2"
}
expect_dir /var/lib/aios-agent-task "aios-agent-task:aios-agent-task 750"
expect_dir /data/aios-gitops "aios-agent-task:gitops 2750"
expect_dir /var/lib/aios-external-agent-executor "aios-engineering-executor:aios-executor-exchange 2770"
expect_dir /var/lib/aios-external-agent-executor/started "aios-engineering-executor:aios-executor-exchange 750"
expect_dir /var/lib/aios-online-agent-worker "aios-engineering-worker:aios-engineering-worker 750"
expect_dir /var/lib/aios-agent-runtime-broker/worktrees "aios-engineering-worker:aios-agent-runtime-exchange 2770"
expect_dir /var/lib/aios-agent-runtime-broker/exchange/requests "aios-engineering-worker:aios-agent-runtime-exchange 2770"
expect_dir /var/lib/aios-agent-runtime-broker/exchange/started "aios-engineering-executor:aios-agent-runtime-exchange 750"
expect_dir /etc/aios/external-agent-runtime.d "root:root 755"

# ... and the exchange key: root's alone, 64 hex digits, kept as it is when configure runs again.
key=/etc/credstore/aios-exchange-result.key
expect_dir /etc/credstore "root:root 700"
[ "$(owner_and_mode "$key")" = "root:root 600" ] || fail "$key is $(owner_and_mode "$key")"
grep -qxE '[0-9a-f]{64}' "$root$key" || fail "$key is not 64 hex digits"
before=$(cat "$root$key")
DPKG_ROOT="$root" sh "$work/control/postinst" configure >/dev/null 2>&1 || fail "postinst again"
[ "$(cat "$root$key")" = "$before" ] || fail "a second configure replaced the exchange key"

# No installed file is writable by anyone but root.
writable=$(find "$root/usr" "$root/etc/aios" -perm /022 ! -type l -print)
[ -z "$writable" ] || fail "group/world-writable: $writable"

# The units as systemd will load them, with the binaries installed (and /bin/kill of procps, a
# declared dependency, which the control plane's ExecReload= calls).
install -D -m 0755 /bin/kill "$root/bin/kill"
if ! systemd-analyze verify --root="$root" "${units[@]/%/.service}" aios-verification-sandbox.socket \
  >"$work/verify.log" 2>&1; then
  fail "systemd-analyze verify: $(cat "$work/verify.log")"
fi

if [ "$failures" -ne 0 ]; then
  echo "package test: $failures failure(s)"
  exit 1
fi
echo "package test: ok"
