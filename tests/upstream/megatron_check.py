#!/usr/bin/env python3
"""Runs Megatron-LM's own argument parsing and validation on command lines captured from exported
launch-node*.sh scripts (by tests/upstream/fake-torchrun). Developer tool: see docs/export.md.

usage: megatron_check.py MEGATRON_DIR CAPTURED.argv...

For each file: splits torchrun's options from the training script's, sets WORLD_SIZE/RANK as
torchrun would (nnodes x nproc_per_node, rank of local rank 0 of that node), then calls
megatron.training.arguments.parse_args + validate_args and builds the TransformerConfig
(core_transformer_config_from_args). Prints one line per file; exit 1 when any fails.
"""
import contextlib
import io
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torchshim  # noqa: E402

torchshim.install(["triton", "numpy", "transformer_engine", "apex", "flash_attn"])
# The GPU the script would run on (validation branches on its compute capability):
# MEMX_GPU_ARCH=major.minor, e.g. 9.0 for H100, 8.0 for A100, 7.0 for V100.
torchshim.fake_cuda_device(os.environ.get("MEMX_GPU_ARCH", "9.0"))


def split_torchrun(argv):
    """torchrun options (dict) and the entrypoint's arguments."""
    opts, i = {}, 0
    while i < len(argv) and argv[i].startswith("--"):
        opts[argv[i][2:].replace("-", "_")] = argv[i + 1]
        i += 2
    return opts, argv[i], argv[i + 1:]


def check(megatron_dir, path):
    with open(path, "rb") as f:
        argv = [w.decode() for w in f.read().split(b"\0")[:-1]]
    opts, entry, args = split_torchrun(argv)
    with open(path[: -len(".argv")] + ".env", "rb") as f:  # what the script exported
        for item in f.read().split(b"\0")[:-1]:
            key, _, value = item.decode().partition("=")
            os.environ[key] = value
    world = int(opts["nnodes"]) * int(opts["nproc_per_node"])
    os.environ.update(WORLD_SIZE=str(world), RANK=str(int(opts["node_rank"]) * int(opts["nproc_per_node"])),
                      LOCAL_RANK="0")
    if not os.path.isfile(entry):
        raise RuntimeError(f"entrypoint {entry} does not exist")
    sys.argv = [entry] + args
    from megatron.training.arguments import parse_args, validate_args
    from megatron.training.argument_utils import core_transformer_config_from_args

    a = parse_args()
    validate_args(a, {})
    config = core_transformer_config_from_args(a)
    cp = getattr(a, "context_parallel_size", 1) or 1
    vpp = getattr(a, "virtual_pipeline_model_parallel_size", None)
    extra = (f" (cp comm {a.cp_comm_type})" if cp > 1 else "") + (f", {vpp} virtual stages per rank" if vpp else "")
    return (f"world {world} = TP {a.tensor_model_parallel_size}{' x CP ' + str(cp) if cp > 1 else ''}"
            f" x PP {a.pipeline_model_parallel_size} x DP {a.data_parallel_size}{extra}, layers {a.num_layers}, MBS {a.micro_batch_size}, GBS {a.global_batch_size},"
            f" {a.position_embedding_type} (rotary base {a.rotary_base}), recompute {config.recompute_granularity}/{config.recompute_method}"
            f"/{config.recompute_num_layers}, {'bf16' if a.bf16 else 'fp16' if a.fp16 else 'fp32'}"
            + (f", fp8 {config.fp8} ({config.fp8_recipe} recipe, {a.transformer_impl})" if config.fp8 else "")
            + (f", Megatron-FSDP {a.data_parallel_sharding_strategy} (ckpt {a.ckpt_format}, distributed optimizer"
               f" {a.use_distributed_optimizer})" if getattr(a, "use_megatron_fsdp", False) else ""))


def main():
    megatron_dir, files = sys.argv[1], sys.argv[2:]
    sys.path.insert(0, megatron_dir)
    failed = 0
    for path in files:
        log = io.StringIO()  # Megatron prints every argument; shown only on failure
        try:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                summary = check(megatron_dir, path)
            print(f"ok   {path}: {summary}")
        except BaseException as e:  # argparse exits with SystemExit; asserts raise AssertionError
            failed += 1
            print(log.getvalue()[-4000:])
            print(f"FAIL {path}: {type(e).__name__}: {e}")
            traceback.print_exc(limit=3)
        # Megatron keeps global state (parsed args): start each file from a clean import.
        for name in [m for m in sys.modules if m.startswith("megatron")]:
            del sys.modules[name]
    print(f"stubbed for torch 1.13: {len(set(torchshim.stubbed))} names (run with -v to list)"
          if "-v" not in os.environ.get("MEMX_CHECK_FLAGS", "") else sorted(set(torchshim.stubbed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
