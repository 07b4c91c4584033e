#!/usr/bin/env bash
# One entry point for a fresh Debian machine:
#   packaging/dev.sh run    install dependencies, build, open the workbench on a shipped sample
#                           cluster (or, without a display, print the CLI search report for it)
#   packaging/dev.sh test   install dependencies, build, run the whole test suite
# Options come from the environment: BUILD_DIR (default build), PRESET (default "default").
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
mode=${1:-}
case "$mode" in run|test) ;; *) echo "usage: $0 run|test" >&2; exit 2;; esac

bash packaging/install-deps.sh
preset=${PRESET:-default}
cmake --preset "$preset" >/dev/null
jobs=$(nproc 2>/dev/null || echo 2)
cmake --build --preset "$preset" -j "$jobs"
build_dir=$( [ "$preset" = asan ] && echo build-asan || echo build )

sample=sample_clusters/paper-20gpu-nvidia-amd.json
if [ "$mode" = run ]; then
  if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -x "$build_dir/app/gui/memx-workbench" ]; then
    exec "$build_dir/app/gui/memx-workbench" "$sample"
  fi
  echo "No display: printing the CLI report for $sample" >&2
  if "$build_dir/app/cli/memx" search --help >/dev/null 2>&1; then
    exec "$build_dir/app/cli/memx" search --cluster "$sample" --model llama2-7b --weights 1,0.5,0.5 --top 10
  fi
  exec "$build_dir/app/cli/memx" info "$sample"
fi

ctest --preset "$preset" -j "$jobs"
