#!/bin/sh
# Accuracy of the cost model (and the learned predictor where a data set has enough runs with
# both time and memory) on every PUBLIC measured data set in ../shared/data/public, one project
# per data set; `--calibrate` re-runs the leave-one-out with memx profile calibrate's fit refitted in
# every fold on its training runs only. docs/accuracy.md quotes what this prints.
# Usage: tests/accuracy/public-data.sh [MEMX_BINARY] [WORKDIR]
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MEMX=${1:-$ROOT/build/app/cli/memx}
WORK=${2:-$(mktemp -d)}
DATA=${MEMX_SHARED_DIR:-$ROOT/../shared}/data/public
mkdir -p "$WORK"
rm -f "$WORK"/*.memx

echo "== megatron-tutorials: upstream Megatron-LM on 8 x H100 80GB (device-used peak, step time)"
"$MEMX" profile import --format runs-csv "$DATA/megatron-tutorials/h100_runs.csv" --project "$WORK/mt.memx"
"$MEMX" evaluate --project "$WORK/mt.memx" --analytic
"$MEMX" evaluate --project "$WORK/mt.memx" --loo
"$MEMX" evaluate --project "$WORK/mt.memx" --loo --calibrate

echo "== vTrain: Megatron-DeepSpeed on one node of A100s (iteration time only)"
"$MEMX" profile import --format vtrain "$DATA/vtrain/ground_truth_single.csv" --project "$WORK/vtrain.memx"
"$MEMX" evaluate --project "$WORK/vtrain.memx" --analytic

echo "== Sailor: GH200 runs with the dataset's per-layer profiles"
"$MEMX" profile import --format sailor "$DATA/sailor" --project "$WORK/sailor.memx" > /dev/null
"$MEMX" evaluate --project "$WORK/sailor.memx" --loo
"$MEMX" evaluate --project "$WORK/sailor.memx" --loo --calibrate

echo "== vTrain, throughput ranking within (model, GPU count): the 24 groups of alternatives"
"$MEMX" evaluate --project "$WORK/vtrain.memx" --analytic --json > "$WORK/vtrain.json"
python3 - "$WORK/vtrain.json" <<'PY'
import json, sys, collections
runs = json.load(open(sys.argv[1]))["reports"][0]["runs"]
groups = collections.defaultdict(list)
for r in runs:
    cluster, model, gbs = r["rankingSet"].split("|")
    g = int(gbs.split()[1])
    groups[(cluster, model)].append((g / r["analyticTimeMs"], g / r["measuredTimeMs"]))
conc = disc = top1 = 0
regret = []
for key, v in sorted(groups.items()):
    for i in range(len(v)):
        for j in range(i + 1, len(v)):
            x = (v[i][0] - v[j][0]) * (v[i][1] - v[j][1])
            conc += x > 0
            disc += x < 0
    pick = max(range(len(v)), key=lambda i: v[i][0])
    best = max(x[1] for x in v)
    top1 += v[pick][1] == best
    regret.append(100 * (best / v[pick][1] - 1))
print("groups %d, Kendall tau %.2f, Top-1 %d/%d, mean regret %.1f%%, worst %.1f%%" % (
    len(groups), (conc - disc) / max(1, conc + disc), top1, len(groups), sum(regret) / len(regret), max(regret)))
PY

echo "== Calibration (memx profile calibrate --dry-run): defaults, in-sample and 5-fold out-of-sample"
for P in mt vtrain sailor; do
  echo "-- $P"
  "$MEMX" profile calibrate --project "$WORK/$P.memx" --dry-run
done
