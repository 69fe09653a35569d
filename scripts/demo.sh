#!/usr/bin/env bash
# Sets everything up, then runs today's main demo of air.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/air demo "$@"
