#!/usr/bin/env bash
# Sets up a "remote host" on this machine for air's remote workers (issue #27, IMPL-REMOTE-1):
# an OpenSSH server on 127.0.0.1 with its own port (from the checkout's path), host key and
# sshd_config under .remote/ (project-owned, never /etc/ssh), a separate unprivileged user
# (airremote) with a venv per checkout holding the air wheel built from it, a client key and a
# known_hosts file that pins the server's host key, and .remote/hosts.yaml naming `local-ssh`.
# Needs root (or passwordless sudo): it creates a user and starts sshd. Safe to run again: it
# only does what is missing, rebuilds the wheel when the sources changed, and restarts sshd when
# its config changed. It fails loudly: the last step logs in over ssh and runs the remote air.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DIR=${AIR_REMOTE_DIR:-$ROOT/.remote}
# each checkout on this machine gets its own sshd port, venv and work directory (several
# checkouts may set up and test at once); the remote user and its authorized keys are shared
ID=$(printf %s "$ROOT" | cksum | cut -d' ' -f1)
PORT=${AIR_REMOTE_PORT:-$((22000 + ID % 1000))}
RUSER=${AIR_REMOTE_USER:-airremote}
PY=${PYTHON:-python3}
BUILD_PY=$PY
# one set-up at a time per checkout (pytest-xdist workers each run it from the remote_host
# fixture); tests that build from the checkout (tests/cli/test_release.py) take the same lock
mkdir -p "$DIR"
exec 9>"$DIR/build.lock"
flock 9
REMOTE_PY=${AIR_REMOTE_PYTHON:-python3}  # found on the remote user's own PATH
[ ! -x .venv/bin/python ] || BUILD_PY=.venv/bin/python

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  sudo -n true 2>/dev/null || { echo "remote_setup: needs root or passwordless sudo" >&2; exit 1; }
  SUDO="sudo -n"
fi

need_apt=()
[ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)
command -v ssh >/dev/null 2>&1 || need_apt+=(openssh-client)
command -v setpriv >/dev/null 2>&1 || need_apt+=(util-linux)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "remote_setup: installing ${need_apt[*]} with apt-get" >&2
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    "${need_apt[@]}" >/dev/null
fi

mkdir -p "$DIR"
chmod 700 "$DIR"
# a file the tests read while another pytest worker runs this script: replaced by a rename
# (never seen truncated), and only when its text changes
replace_file() {
  local tmp
  tmp=$(mktemp "$1.XXXXXX")
  cat >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else chmod 644 "$tmp" && mv -f "$tmp" "$1"; fi
}

# the remote user: no password, no sudo, a home of its own
if ! id "$RUSER" >/dev/null 2>&1; then
  $SUDO useradd --create-home --shell /bin/bash --user-group "$RUSER" || id "$RUSER" >/dev/null
fi
# '*': no password can match, yet the account is not locked ('!'), which sshd without PAM refuses
$SUDO usermod -p '*' "$RUSER"
RHOME=$(getent passwd "$RUSER" | cut -d: -f6)
[ -d "$RHOME" ] || { echo "remote_setup: $RUSER has no home ($RHOME)" >&2; exit 1; }
as_remote() { $SUDO setpriv --reuid="$RUSER" --regid="$RUSER" --init-groups \
  env -i HOME="$RHOME" USER="$RUSER" PATH=/usr/local/bin:/usr/bin:/bin "$@"; }

# keys: the server's host key and the client's identity, both under $DIR
[ -f "$DIR/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N "" -C air-remote-host \
  -f "$DIR/ssh_host_ed25519_key"
[ -f "$DIR/id_ed25519" ] || ssh-keygen -q -t ed25519 -N "" -C air-remote-client -f "$DIR/id_ed25519"
chmod 600 "$DIR/ssh_host_ed25519_key" "$DIR/id_ed25519"
echo "[127.0.0.1]:$PORT $(cut -d' ' -f1,2 "$DIR/ssh_host_ed25519_key.pub")" \
  | replace_file "$DIR/known_hosts"
$SUDO install -d -m 700 -o "$RUSER" -g "$RUSER" "$RHOME/.ssh"
# add this checkout's key (other checkouts' keys stay)
key=$(cut -d' ' -f1,2 "$DIR/id_ed25519.pub")
if ! $SUDO grep -qsF "$key" "$RHOME/.ssh/authorized_keys"; then
  echo "$key air-remote-client $ROOT" | $SUDO tee -a "$RHOME/.ssh/authorized_keys" >/dev/null
fi
$SUDO chown "$RUSER:$RUSER" "$RHOME/.ssh/authorized_keys"
$SUDO chmod 600 "$RHOME/.ssh/authorized_keys"

# the remote air: a wheel built from this checkout, in the remote user's own venv
WHEELS="$DIR/wheel"
stamp="$DIR/wheel.stamp"
if [ ! -f "$stamp" ] || [ -n "$(find air setup.cfg pyproject.toml -newer "$stamp" -not -path '*/__pycache__/*' -print -quit)" ]; then
  rm -rf "$WHEELS" && mkdir -p "$WHEELS"
  "$BUILD_PY" -m pip wheel -q --no-deps -w "$WHEELS" . >"$DIR/wheel.log" 2>&1 \
    || { cat "$DIR/wheel.log" >&2; exit 1; }
  chmod -R a+rX "$WHEELS"
  touch "$stamp.new"
fi
# the remote user must be able to read the wheel: copy it into its home
RWHEEL="$RHOME/wheel-$ID"
VENV="$RHOME/venv-$ID"
WORK="$RHOME/air-work-$ID"
$SUDO rm -rf "$RWHEEL" && $SUDO cp -r "$WHEELS" "$RWHEEL"
$SUDO chown -R "$RUSER:$RUSER" "$RWHEEL"
[ -x "$VENV/bin/python" ] || as_remote "$REMOTE_PY" -m venv "$VENV"
wheel=$(ls "$RWHEEL"/*.whl)
if [ -f "$stamp.new" ] || ! as_remote "$VENV/bin/python" -P -c 'import air' 2>/dev/null; then
  as_remote "$VENV/bin/python" -m pip install -q --force-reinstall --no-deps "$wheel" >/dev/null
  as_remote "$VENV/bin/python" -m pip install -q "$wheel" >/dev/null
  [ ! -f "$stamp.new" ] || mv "$stamp.new" "$stamp"
fi
$SUDO install -d -m 700 -o "$RUSER" -g "$RUSER" "$WORK"

# sshd: own config, port, host key and pid file; key logins of the remote user only
cat >"$DIR/sshd_config.new" <<EOF
Port $PORT
ListenAddress 127.0.0.1
HostKey $DIR/ssh_host_ed25519_key
PidFile $DIR/sshd.pid
AllowUsers $RUSER
PermitRootLogin no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
UsePAM no
PermitUserEnvironment no
AllowAgentForwarding no
AllowTcpForwarding no
X11Forwarding no
PermitTTY no
ClientAliveInterval 15
ClientAliveCountMax 4
MaxStartups 64:30:128
MaxSessions 64
LogLevel ERROR
EOF
changed=1
if [ -f "$DIR/sshd_config" ] && cmp -s "$DIR/sshd_config" "$DIR/sshd_config.new"; then changed=0; fi
mv "$DIR/sshd_config.new" "$DIR/sshd_config"
$SUDO mkdir -p /run/sshd
$SUDO /usr/sbin/sshd -t -f "$DIR/sshd_config"
running=0
# the pid file outlives a reboot, and its number may then name another process (a kernel
# thread answers kill -0 too): running means that pid is an sshd started with this config
if [ -f "$DIR/sshd.pid" ] && $SUDO tr '\0' ' ' 2>/dev/null <"/proc/$(cat "$DIR/sshd.pid")/cmdline" \
  | grep -qF "sshd -f $DIR/sshd_config"; then running=1; fi
if [ $running -eq 1 ] && [ $changed -eq 1 ]; then
  $SUDO kill "$(cat "$DIR/sshd.pid")"
  for _ in $(seq 50); do $SUDO kill -0 "$(cat "$DIR/sshd.pid")" 2>/dev/null || break; sleep 0.1; done
  running=0
fi
[ $running -eq 1 ] || $SUDO /usr/sbin/sshd -f "$DIR/sshd_config"

replace_file "$DIR/hosts.yaml" <<EOF
# written by scripts/remote_setup.sh: this machine's sshd on 127.0.0.1:$PORT as a remote host
hosts:
  local-ssh:
    launcher: ssh
    host: 127.0.0.1
    port: $PORT
    user: $RUSER
    identity: $DIR/id_ed25519
    known_hosts: $DIR/known_hosts
    python: $VENV/bin/python
    workdir: $WORK
EOF

# prove it: a login with strict host keys runs the remote air
for _ in $(seq 50); do
  if ssh -T -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$DIR/known_hosts" \
    -o IdentitiesOnly=yes -i "$DIR/id_ed25519" -p "$PORT" "$RUSER@127.0.0.1" \
    "$VENV/bin/python -P -c 'import air; print(air.__version__)'" >"$DIR/remote_version" 2>"$DIR/ssh_check.err"; then
    echo "remote_setup: $RUSER@127.0.0.1:$PORT runs air $(cat "$DIR/remote_version")" >&2
    exit 0
  fi
  sleep 0.2
done
echo "remote_setup: cannot run the remote air over ssh:" >&2
cat "$DIR/ssh_check.err" >&2
exit 1
