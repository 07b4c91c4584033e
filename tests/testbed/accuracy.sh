#!/bin/sh
# Learned-predictor accuracy on the VIRTUAL TESTBED (simulated runs, no GPUs).
# Usage: tests/testbed/accuracy.sh [MEMX_BINARY] [WORKDIR]
# Builds a project of simulated profiles + runs on the two 20-GPU samples with two models (per
# cluster/model: the minimal-set profiling jobs + interpolation of the rest (`memx profile augment`), then the 8 fastest plans + 24 plans spread over
# the whole time ranking, seeds 1 and 2 on different plan sets), then cross-validates
# (`memx evaluate`: leave-one-out and 5-fold, a run's plan never trains the model that predicts it).
set -eu
MEMX=${1:-build/app/cli/memx}
WORK=${2:-$(mktemp -d)}
P="$WORK/testbed.memx"
rm -f "$P"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
for C in paper-20gpu-nvidia-amd paper-20gpu-mixed-consumer; do
  for M in llama2-7b gpt3-1.3b; do
    CL="$ROOT/sample_clusters/$C.json"
    "$MEMX" profile plan --cluster "$CL" --model "$M" --stages 1,2 --out "$WORK/jobs-$C-$M" --force --date 2026-01-01T00:00:00Z > /dev/null
    "$MEMX" profile run-simulated --project "$P" --jobs "$WORK/jobs-$C-$M/manifest.json" --seed 1 --group "testbed/$C/$M" > /dev/null
    # Two disjoint plan sets (different --spread counts pick different ranks), two seeds.
    "$MEMX" profile run-simulated --project "$P" --cluster "$CL" --model "$M" --stages 1,2 --top 8 --spread 24 --seed 1 --group "testbed/$C/$M" > /dev/null
    "$MEMX" profile run-simulated --project "$P" --cluster "$CL" --model "$M" --stages 1,2 --top 0 --spread 17 --seed 2 --group "testbed/$C/$M" > /dev/null
  done
done
# The minimal set measures a few (TP, micro-batch) keys per GPU and leaves the rest to
# interpolation (as `memx profile plan` says). Without this step, stages whose replica micro-batch
# was not measured fell back to the analytic FLOPs model in every feature. Interpolation uses the
# profiling jobs only (never a run), and the run selection above is unchanged by it.
"$MEMX" profile augment --project "$P" > /dev/null
"$MEMX" profile list --project "$P" | tail -3
"$MEMX" evaluate --project "$P"
