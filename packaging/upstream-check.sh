#!/usr/bin/env bash
# Developer-run check (not run by CI): exports every golden case of tests/data/export/cases.json
# and validates the files with the real upstream code.
#
#   MEGATRON_DIR=/path/to/Megatron-LM FLAGSCALE_DIR=/path/to/FlagScale packaging/upstream-check.sh
#
# Optional: MEMX (the memx binary, default build/app/cli/memx), PYTHON (a python3 with torch,
# omegaconf, yaml; default /usr/bin/python3 - Debian's python3-torch 1.13 is enough), WORK (folder for
# the exports and logs; default a new temporary folder).
#
# Megatron-LM: every launch-node*.sh runs with tests/upstream/fake-torchrun as `torchrun` (it records
# argv and the environment, starts nothing); tests/upstream/megatron_check.py then runs
# megatron.training.arguments.parse_args + validate_args and builds the TransformerConfig on it.
# FlagScale: tests/upstream/flagscale_check.py runs the runner's dry run (SSHTrainRunner.run(dryrun=True))
# and checks the per-host scripts it writes; tests/upstream/flagscale_args_check.py then runs
# FlagScale's argument validation (parse_args, pre_validate_args, validate_args, post_validate_args)
# for every rank on Megatron-LM at the commit FlagScale pins with FlagScale's patches applied. That
# tree is built in $WORK/flagscale-megatron from MEGATRON_DIR's git history, or given as
# FLAGSCALE_MEGATRON_DIR. What is and is not checked: docs/export.md.
set -euo pipefail

: "${MEGATRON_DIR:?set MEGATRON_DIR to a Megatron-LM source tree}"
: "${FLAGSCALE_DIR:?set FLAGSCALE_DIR to a FlagScale source tree}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MEMX="${MEMX:-$ROOT/build/app/cli/memx}"
PYTHON="${PYTHON:-/usr/bin/python3}"
WORK="${WORK:-$(mktemp -d /tmp/memx-upstream-check.XXXXXX)}"
UP="$ROOT/tests/upstream"
[ -x "$MEMX" ] || { echo "upstream-check: $MEMX is not built (cmake --build build --target memx)" >&2; exit 2; }
"$PYTHON" -c 'import torch, omegaconf, yaml' 2>/dev/null \
    || { echo "upstream-check: $PYTHON lacks torch/omegaconf/yaml (apt-get install python3-torch python3-omegaconf python3-yaml)" >&2; exit 2; }

mkdir -p "$WORK/bin"
ln -sf "$UP/fake-torchrun" "$WORK/bin/torchrun"
rev() { git -C "$1" rev-parse HEAD 2>/dev/null || echo "unknown (not a git checkout)"; }
echo "upstream-check: Megatron-LM $(rev "$MEGATRON_DIR"), FlagScale $(rev "$FLAGSCALE_DIR"), work folder $WORK"

# Compute capability the Megatron validation assumes, from the device id in the script header.
gpu_arch() {
    case "$(sed -n 2p "$1")" in
        *h100* | *h200* | *mi250x* | *mi300*) echo 9.0 ;;
        *v100*) echo 7.0 ;;
        *) echo 8.0 ;;
    esac
}

# Megatron-LM as FlagScale runs it: the pinned submodule commit + flagscale/backends/Megatron-LM patches.
if [ -z "${FLAGSCALE_MEGATRON_DIR:-}" ]; then
    pinned="$(git -C "$FLAGSCALE_DIR" ls-tree HEAD third_party/Megatron-LM | awk '{print $3}')"
    FLAGSCALE_MEGATRON_DIR="$WORK/flagscale-megatron"
    if [ ! -d "$FLAGSCALE_MEGATRON_DIR/megatron" ]; then
        git -C "$MEGATRON_DIR" cat-file -e "$pinned^{commit}" 2>/dev/null \
            || { echo "upstream-check: MEGATRON_DIR has no commit $pinned (FlagScale's pin); set FLAGSCALE_MEGATRON_DIR" >&2; exit 2; }
        mkdir -p "$FLAGSCALE_MEGATRON_DIR"
        git -C "$MEGATRON_DIR" archive "$pinned" | tar -x -C "$FLAGSCALE_MEGATRON_DIR"
        git -C "$FLAGSCALE_MEGATRON_DIR" init -q
        (cd "$FLAGSCALE_DIR/flagscale/backends/Megatron-LM" && find . -name '*.patch' | sort) | while read -r p; do
            git -C "$FLAGSCALE_MEGATRON_DIR" apply --whitespace=nowarn "$FLAGSCALE_DIR/flagscale/backends/Megatron-LM/$p"
        done
    fi
    echo "upstream-check: FlagScale's Megatron-LM = $pinned + $(find "$FLAGSCALE_DIR/flagscale/backends/Megatron-LM" -name '*.patch' | wc -l) FlagScale patches"
fi

failed=0
while IFS=$'\t' read -r name cluster model plan split refused; do
    for format in megatron flagscale; do
        case " $refused " in *" $format "*) echo "skip $name/$format (refused by design)"; continue ;; esac
        out="$WORK/$name/$format"
        rm -rf "$out"
        "$MEMX" export --cluster "$ROOT/$cluster" --model "$model" --plan "$ROOT/$plan" --format "$format" \
            --split-style "$split" --date 2025-01-01T00:00:00Z --out "$out" > /dev/null
        if [ "$format" = megatron ]; then
            captures=()
            for script in "$out"/launch-node*.sh; do
                node="$(basename "$script" .sh)"
                MEMX_CAPTURE_DIR="$out" MEMX_CAPTURE_NAME="$node" MEGATRON_DIR="$MEGATRON_DIR" PATH="$WORK/bin:$PATH" \
                    bash "$script" > /dev/null
                captures+=("$out/$node.argv")
            done
            echo "== $name/megatron: Megatron-LM parse_args + validate_args + TransformerConfig"
            MEMX_GPU_ARCH="$(gpu_arch "$out/launch-node0.sh")" "$PYTHON" "$UP/megatron_check.py" "$MEGATRON_DIR" \
                "${captures[@]}" || failed=1
        else
            echo "== $name/flagscale: FlagScale runner dry run"
            mkdir -p "$WORK/$name/flagscale-run"
            "$PYTHON" "$UP/flagscale_check.py" "$FLAGSCALE_DIR" "$out" "$WORK/$name/flagscale-run" \
                > "$WORK/$name/flagscale-run.log" 2>&1 || { failed=1; tail -n 30 "$WORK/$name/flagscale-run.log"; }
            grep -E '^(ok|FAIL) ' "$WORK/$name/flagscale-run.log" || true
            echo "== $name/flagscale: FlagScale argument validation on every rank"
            "$PYTHON" "$UP/flagscale_args_check.py" "$FLAGSCALE_DIR" "$FLAGSCALE_MEGATRON_DIR" "$WORK/$name/flagscale-run" \
                || failed=1
        fi
    done
done < <("$PYTHON" - "$ROOT/tests/data/export/cases.json" <<'PY'
import json, sys
for c in json.load(open(sys.argv[1]))["cases"]:
    print("\t".join([c["name"], c["cluster"], c["model"], c["plan"], c.get("splitStyle", "layout"),
                     " ".join(c["refused"])]))
PY
)

if [ "$failed" = 0 ]; then echo "upstream-check: all passed"; else echo "upstream-check: FAILED" >&2; fi
exit "$failed"
