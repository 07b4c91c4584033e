#!/usr/bin/env python3
"""FlagScale's argument validation on every rank of a dry-run FlagScale job (after flagscale_check.py).
Developer tool: see docs/export.md.

usage: flagscale_args_check.py FLAGSCALE_DIR PATCHED_MEGATRON_DIR RUN_DIR

PATCHED_MEGATRON_DIR is Megatron-LM at the commit FlagScale pins (third_party/Megatron-LM) with
FlagScale's flagscale/backends/Megatron-LM/**/*.patch applied (packaging/upstream-check.sh builds it).
For every global rank, as initialize_megatron does in FlagScale's patched Megatron:
parse_args (FlagScale's flags included), FSTrainArguments.pre_validate_args (mesh rules, per-mesh
micro-batch), validate_args, post_validate_args (per-stage recompute configs). torch.distributed is
not started: get_rank/get_world_size answer for the rank checked, and the RankMapper is replaced by
the same mapping computed here (physical ranks sorted by the index of their hostfile type= in
hetero_device_types, then by rank - parallel_context.RankMapper's order).
"""
import contextlib
import glob
import io
import json
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torchshim  # noqa: E402

torchshim.install(["triton", "numpy", "transformer_engine", "apex", "flash_attn"])
torchshim.fake_cuda_device(os.environ.get("MEMX_GPU_ARCH", "8.0"))


class Mapper:
    """parallel_context.RankMapper without the all-gather."""

    def __init__(self, rank_types, device_types):
        order = sorted(range(len(rank_types)), key=lambda r: (device_types.index(rank_types[r]), r))
        self.logical = {phys: logical for logical, phys in enumerate(order)}

    def to_logical_ranks(self, ranks):
        return [self.logical[r] for r in ranks]


def load_hosts(run_dir):
    hosts = []
    for meta in sorted(glob.glob(os.path.join(run_dir, "host_*.json")), key=lambda p: json.load(open(p))["node_rank"]):
        h = json.load(open(meta))
        base = meta[: -len(".json")]
        h["args"] = [w.decode() for w in open(base + ".args", "rb").read().split(b"\0")[:-1]]
        h["env"] = dict(i.decode().split("=", 1) for i in open(base + ".env", "rb").read().split(b"\0")[:-1])
        hosts.append(h)
    return hosts


def check_rank(rank, world, host, rank_types):
    import torch

    os.environ.update(host["env"], RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank % host["nproc"]))
    torch.distributed.get_rank = lambda *a, **k: rank
    torch.distributed.get_world_size = lambda *a, **k: world
    sys.argv = ["train_gpt.py"] + host["args"]
    from megatron.training.arguments import parse_args, validate_args
    from flagscale.train.arguments import FSTrainArguments

    args = parse_args()
    fs = FSTrainArguments(args, rank_mapper=Mapper(rank_types, args.hetero_device_types))
    fs.pre_validate_args()
    validate_args(args, {})
    fs.post_validate_args()
    return (f"TP {args.tensor_model_parallel_size} DP {args.data_parallel_size} PP {args.pipeline_model_parallel_size}"
            f" MBS {args.micro_batch_size} device {args.hetero_current_device_type}, {args.position_embedding_type}"
            f" base {args.rotary_base}, save every {args.save_interval}")


def main():
    flagscale_dir, megatron_dir, run_dir = sys.argv[1:4]
    sys.path[:0] = [flagscale_dir, megatron_dir]
    hosts = load_hosts(run_dir)
    rank_types = [h["type"] for h in hosts for _ in range(h["nproc"])]
    world = len(rank_types)
    failed, rank = 0, 0
    for h in hosts:
        results = []
        for local in range(h["nproc"]):
            log = io.StringIO()
            try:
                with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                    results.append(check_rank(rank, world, h, rank_types))
            except BaseException as e:
                failed += 1
                print(log.getvalue()[-3000:])
                print(f"FAIL rank {rank} ({h['host']} local {local}): {type(e).__name__}: {e}")
                traceback.print_exc(limit=4)
            rank += 1
        if results:
            print(f"ok   host {h['node_rank']} {h['host']}: {len(results)} ranks validated; "
                  + "; ".join(sorted(set(results))))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
