#!/usr/bin/env python3
"""Runs upstream FlagScale's runner in dry-run mode on an exported FlagScale folder, then checks
the per-host scripts it wrote. Developer tool: see docs/export.md.

usage: flagscale_check.py FLAGSCALE_DIR EXPORT_DIR WORK_DIR

- Composes the config as run.py's Hydra would (conf/memx.yaml with `train` = conf/train/memx.yaml),
  with OmegaConf; exp_dir and the hostfile path are moved into WORK_DIR (the export names
  /opt/... paths of the nodes).
- SSHTrainRunner(config).run(dryrun=True): parses the hostfile, merges envs per host and device
  type, counts *_VISIBLE_DEVICES (the runner fails with UnboundLocalError num_visible_devices when a
  host has none), writes host_<rank>_<host>_run.sh; ssh is only printed.
- Checks every host script: torchrun --nproc_per_node equals the hostfile slots and the number of
  visible devices, --node_rank is the hostfile order, --hetero-current-device-type is the host's
  type=, --save and --save-interval are both present, and the training arguments are written to
  WORK_DIR/host_<rank>.args (NUL-separated) for the argument validation step.
"""
import json
import os
import re
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torchshim  # noqa: E402

torchshim.install([])


def compose(export_dir, work_dir):
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(os.path.join(export_dir, "conf", "memx.yaml"))
    train = OmegaConf.load(os.path.join(export_dir, "conf", "train", "memx.yaml"))
    assert list(cfg.defaults) == [{"train": "memx"}, "_self_"], f"unexpected defaults {cfg.defaults}"
    del cfg["defaults"]
    cfg.train = train
    cfg.experiment.exp_dir = os.path.join(work_dir, "outputs")
    cfg.experiment.runner.hostfile = os.path.join(export_dir, "hostfile")
    return cfg


def host_scripts(cfg):
    d = os.path.join(cfg.experiment.exp_dir, "logs", "scripts")
    return sorted(f for f in os.listdir(d) if f.endswith("_run.sh")), d


def check_script(path, rank, host, info, problems):
    text = open(path).read()
    # The runner writes cmd="ENV=... torchrun ... entrypoint args" and runs it with bash -c "$cmd".
    line = next((l for l in text.splitlines() if l.startswith("cmd=")), None)
    if line is None or "torchrun" not in line:
        problems.append(f"{path}: no cmd=\"... torchrun ...\" line")
        return None
    words = shlex.split(shlex.split(line[len("cmd="):])[0])
    env = {w.split("=", 1)[0]: w.split("=", 1)[1] for w in words[: words.index("torchrun")] if "=" in w}
    words = words[words.index("torchrun"):]

    def opt(name):
        return words[words.index(name) + 1] if name in words else None

    visible = [v for k, v in env.items() if k.endswith("_VISIBLE_DEVICES")]
    nproc = int(opt("--nproc_per_node"))
    if not visible or len(visible[0].split(",")) != info["slots"]:
        problems.append(f"{host}: visible devices {visible} do not match slots={info['slots']}")
    if nproc != info["slots"]:
        problems.append(f"{host}: --nproc_per_node {nproc}, hostfile slots={info['slots']}")
    if int(opt("--node_rank")) != rank:
        problems.append(f"{host}: --node_rank {opt('--node_rank')}, hostfile order {rank}")
    if opt("--hetero-current-device-type") != info["type"]:
        problems.append(f"{host}: --hetero-current-device-type {opt('--hetero-current-device-type')}, type={info['type']}")
    for flag in ("--save", "--save-interval", "--rotary-base"):
        if flag not in words and not (flag == "--rotary-base" and opt("--position-embedding-type") != "rope"):
            problems.append(f"{host}: {flag} missing")
    entry = next(i for i, w in enumerate(words) if w.endswith(".py"))
    return env, words[entry + 1:], nproc, visible[0] if visible else ""


def main():
    flagscale_dir, export_dir, work_dir = (os.path.abspath(p) for p in sys.argv[1:4])
    sys.path.insert(0, flagscale_dir)
    os.chdir(flagscale_dir)  # run.py is started from the checkout
    from flagscale.runner.runner_train import SSHTrainRunner
    from flagscale.runner.utils import parse_hostfile

    cfg = compose(export_dir, work_dir)
    runner = SSHTrainRunner(cfg)
    runner.run(dryrun=True, enable_monitoring=False)
    resources = parse_hostfile(cfg.experiment.runner.hostfile)
    names, d = host_scripts(cfg)
    problems = []
    if len(names) != len(resources):
        problems.append(f"{len(names)} host scripts for {len(resources)} hosts")
    for rank, (host, info) in enumerate(resources.items()):
        script = next((n for n in names if re.fullmatch(rf"host_{rank}_{re.escape(host)}_run\.sh", n)), None)
        if script is None:
            problems.append(f"no script for host {rank} {host}")
            continue
        got = check_script(os.path.join(d, script), rank, host, info, problems)
        if got:
            env, args, nproc, visible = got
            with open(os.path.join(work_dir, f"host_{rank}.args"), "wb") as f:
                f.write(b"".join(a.encode() + b"\0" for a in args))
            with open(os.path.join(work_dir, f"host_{rank}.env"), "wb") as f:
                f.write(b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items()))
            with open(os.path.join(work_dir, f"host_{rank}.json"), "w") as f:
                json.dump({"host": host, "type": info["type"], "nproc": nproc, "node_rank": rank,
                           "nnodes": len(resources)}, f)
            print(f"ok   host {rank} {host}: type={info['type']} nproc_per_node={nproc} visible={visible}")
    for p in problems:
        print("FAIL " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
