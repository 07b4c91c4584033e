#!/bin/sh
# The published planners (Metis, AMP, Sailor, Galvatron, re-implemented from their papers) and
# MemX judged three ways (issue 18; docs/evaluation.md quotes what this prints):
#  1. on the measured runs of every PUBLIC data set in ../shared/data/public: each method's own
#     cost model on the plans that ran (memx compare --measured);
#  2. on the 20-GPU sample clusters: each method's pick under MemX's cost model and the virtual
#     testbed (simulated, never evidence of accuracy), with its search cost (memx compare).
# Usage: tests/accuracy/baselines.sh [--update-doc] [MEMX_BINARY] [WORKDIR]
#   --update-doc: also writes what it prints into docs/evaluation.md, between the lines
#   "<!-- baselines.sh: begin -->" and "<!-- baselines.sh: end -->" (one command regenerates it).
set -eu
UPDATE_DOC=0
if [ "${1:-}" = "--update-doc" ]; then
  UPDATE_DOC=1
  shift
fi
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MEMX=${1:-$ROOT/build/app/cli/memx}
WORK=${2:-$(mktemp -d)}
DATA=${MEMX_SHARED_DIR:-$ROOT/../shared}/data/public
mkdir -p "$WORK"
rm -f "$WORK"/mt.memx "$WORK"/vtrain.memx "$WORK"/sailor.memx

"$MEMX" profile import --format runs-csv "$DATA/megatron-tutorials/h100_runs.csv" --project "$WORK/mt.memx" > /dev/null
"$MEMX" profile import --format vtrain "$DATA/vtrain/ground_truth_single.csv" --project "$WORK/vtrain.memx" > /dev/null
"$MEMX" profile import --format sailor "$DATA/sailor" --project "$WORK/sailor.memx" > /dev/null 2>&1

OUT="$WORK/baselines.txt"
{
for P in mt vtrain sailor; do
  echo "== measured: $P"
  "$MEMX" compare --measured "$WORK/$P.memx"
  echo
done

for C in paper-20gpu-nvidia-amd paper-20gpu-mixed-consumer; do
  echo "== sample cluster: $C (llama2-7b; the testbed is our simulator)"
  "$MEMX" compare --cluster "$ROOT/sample_clusters/$C.json" --model llama2-7b
  echo
done
} > "$OUT"
cat "$OUT"

if [ "$UPDATE_DOC" = 1 ]; then
  DOC="$ROOT/docs/evaluation.md"
  grep -q '^<!-- baselines.sh: begin -->$' "$DOC" && grep -q '^<!-- baselines.sh: end -->$' "$DOC" || {
    echo "baselines.sh: $DOC has no '<!-- baselines.sh: begin/end -->' markers" >&2
    exit 2
  }
  awk -v out="$OUT" -v when="$(date -u +%Y-%m-%d)" '
    /^<!-- baselines.sh: begin -->$/ {
      print; print ""; print "Regenerated " when " by `tests/accuracy/baselines.sh --update-doc`:"; print ""; print "```"
      while ((getline line < out) > 0) print line
      print "```"; print ""; skip = 1; next
    }
    /^<!-- baselines.sh: end -->$/ { skip = 0 }
    !skip { print }
  ' "$DOC" > "$DOC.tmp" && mv "$DOC.tmp" "$DOC"
  echo "baselines.sh: wrote the figures into $DOC" >&2
fi
