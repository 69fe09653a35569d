#!/usr/bin/env bash
# Sets up everything air needs on a fresh Debian machine with Python 3.11:
# system tools (git, bubblewrap, tmux; cmake, ninja, g++, clang, clangd, cppcheck for the C++
# toolchain; node and npm for an MCP reference server), a virtualenv in .venv with air and its
# test and mcp extras, and the published MCP servers the tests talk to in .mcp-servers/ (a venv
# of their own, so their dependencies never change air's).
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v git >/dev/null 2>&1 || need_apt+=(git)
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v slirp4netns >/dev/null 2>&1 || need_apt+=(slirp4netns)
command -v tmux >/dev/null 2>&1 || need_apt+=(tmux)
command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
command -v ninja >/dev/null 2>&1 || need_apt+=(ninja-build)
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
command -v clang++ >/dev/null 2>&1 || need_apt+=(clang)
command -v clangd >/dev/null 2>&1 || need_apt+=(clangd)
command -v cppcheck >/dev/null 2>&1 || need_apt+=(cppcheck)
command -v zsh >/dev/null 2>&1 || need_apt+=(zsh)
command -v fish >/dev/null 2>&1 || need_apt+=(fish)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
# the network tests give the host a link-local address and try to lift a sandbox's routes
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
PY=${PYTHON:-python3}
"$PY" -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${need_apt[*]} with apt-get" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# slirp4netns opens /dev/net/tun as whoever runs air: udev makes it 0666 on Debian, a bare
# container or VM may leave it 0600
if [ ! -e /dev/net/tun ] && [ "$(id -u)" -eq 0 ]; then
  mkdir -p /dev/net && mknod -m 0666 /dev/net/tun c 10 200  # a container without its node
fi
if [ -c /dev/net/tun ] && [ "$(stat -c %a /dev/net/tun)" != 666 ]; then
  [ "$(id -u)" -eq 0 ] && chmod 0666 /dev/net/tun || sudo chmod 0666 /dev/net/tun
fi

"$PY" -c 'import sys; assert sys.version_info >= (3, 11), "air needs Python 3.11 or newer"'
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# an editable install as a plain path entry (compat): setuptools' default editable finder costs
# every air process and worker ~10 ms at start-up, before any air code runs (IMPL-BOOT-6)
stamp=.venv/.air-installed-compat
if [ ! -f "$stamp" ] || [ setup.cfg -nt "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q --config-settings editable_mode=compat -e ".[test,mcp]"
  touch "$stamp"
fi
# bytecode for air's own sources (an editable install has none; with PYTHONDONTWRITEBYTECODE
# set, every air process and worker would compile them again at start-up: IMPL-START-2)
.venv/bin/python -m compileall -q -j 0 air >/dev/null

# published MCP servers for tests/mcp (IMPL-MCP-1): mcp-server-time (stdio, PyPI) in a venv of
# its own, @modelcontextprotocol/server-everything (streamable HTTP, npm); pinned versions
servers=.mcp-servers
if [ ! -x "$servers/venv/bin/mcp-server-time" ]; then
  "$PY" -m venv "$servers/venv"
  "$servers/venv/bin/python" -m pip install -q "mcp-server-time==2026.10.19"
fi
if [ ! -x "$servers/node/node_modules/.bin/mcp-server-everything" ]; then
  mkdir -p "$servers/node"
  npm install --prefix "$servers/node" --no-audit --no-fund --silent \
    "@modelcontextprotocol/server-everything@2026.8.31" >/dev/null
fi

# the "remote host" of tests/remote (issue #27): sshd on 127.0.0.1, its own user and venv
# (needs root or passwordless sudo, as CI and the developers' machines have)
bash scripts/remote_setup.sh

# a single-node Slurm for the srun launcher of tests/remote (issue #27 item 3)
bash scripts/slurm_setup.sh
