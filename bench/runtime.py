"""Speculative decoding vs target-only greedy decoding, on the same prompts, in one run.

    python bench/runtime.py                      # CPU, batch 1, every worker
    python bench/runtime.py --device cuda --batch-size 8

Prints tokens/s of the baseline (target-only greedy, one token per target forward) and of each
worker, each worker's acceptance rate and mean tokens per step, the speed-up against the baseline
measured in this run, and whether the tokens are identical to the baseline's (they must be).

How the drafts relate to the target (no training, nothing downloaded): every draft *shares* the
target's weights. Layer-skip drafts (PARD, dynamic tree) are the target truncated to its first
`--draft-layers` blocks; the Eagle and MTP heads use the same truncated stack plus a small seeded
fusion of the previous hidden state. The target's blocks are initialised with a small residual
scale, so a truncated copy agrees with the full model often - a stand-in for a distilled draft.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from runtime import conformance
from runtime.engine import Engine, greedy_generate
from runtime.model import TinyLM, build_model
from runtime.speculative.interface import SpecConfig, SpecWorkerBase


def discovered_workers(
    package: str = conformance.DEFAULT_PACKAGE,
) -> dict[str, type[SpecWorkerBase]]:
    """Every worker of `package` (by discovery, in import order), named after its module.

    A module that defines several workers names the later ones `module.ClassName`.
    """
    workers: dict[str, type[SpecWorkerBase]] = {}
    for cls in conformance.discover_workers(package):
        name = cls.__module__.rsplit(".", 1)[-1]
        workers[f"{name}.{cls.__name__}" if name in workers else name] = cls
    return workers


WORKERS = discovered_workers()


def make_prompts(n: int, vocab: int, seed: int) -> list[list[int]]:
    """Seeded prompts of mixed lengths (16 to 64 tokens)."""
    gen = torch.Generator().manual_seed(seed)
    lens = torch.randint(16, 65, (n,), generator=gen).tolist()
    return [torch.randint(1, vocab - 1, (k,), generator=gen).tolist() for k in lens]


def sync(device: str) -> None:
    """Wait for queued GPU work so timings are honest."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def run_baseline(
    target: torch.nn.Module, prompts: list[list[int]], new: int, bs: int, device: str
) -> tuple[list[list[int]], float]:
    """Target-only greedy decoding in batches of `bs`; returns (tokens, seconds)."""
    out: list[list[int]] = []
    sync(device)
    start = time.perf_counter()
    for i in range(0, len(prompts), bs):
        out += greedy_generate(target, prompts[i : i + bs], new)  # type: ignore[arg-type]
    sync(device)
    return out, time.perf_counter() - start


def parse_args() -> argparse.Namespace:
    """The command line; every discovered worker unless `--workers` names some."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--preset", default="bench")
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--draft-len", type=int, default=5)
    parser.add_argument("--draft-layers", type=int, default=1)
    parser.add_argument(
        "--workers", default=",".join(WORKERS), help="comma-separated (default: every worker)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: torch default)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    unknown = sorted(set(args.workers.split(",")) - set(WORKERS))
    if unknown:
        parser.error(f"unknown worker(s) {', '.join(unknown)}; known: {', '.join(WORKERS)}")
    return args


def run_worker(
    worker_cls: type[SpecWorkerBase],
    target: TinyLM,
    prompts: list[list[int]],
    spec: SpecConfig,
    args: argparse.Namespace,
) -> tuple[list[list[int]], float, Engine]:
    """One warmed-up speculative run of `worker_cls`; returns (tokens, seconds, its engine)."""
    worker = worker_cls(spec).to(args.device)
    draft = worker.make_draft_model(target)
    Engine(target, worker, draft, max_batch_size=args.batch_size).generate(
        prompts[:1], 8
    )  # warm-up
    engine = Engine(target, worker, draft, max_batch_size=args.batch_size)
    sync(args.device)
    start = time.perf_counter()
    tokens = engine.generate(prompts, args.new_tokens)
    sync(args.device)
    return tokens, time.perf_counter() - start, engine


def print_table(console: Console, rows: list[dict[str, object]]) -> None:
    """The results table and the best worker."""
    table = Table(title="speculative decoding vs target-only greedy (same prompts, same run)")
    for col in ("decoder", "tokens/s", "x baseline", "acceptance", "tokens/step", "identical"):
        table.add_column(col, justify="left" if col == "decoder" else "right")
    for r in rows:
        acc = r["acceptance"]
        table.add_row(
            str(r["name"]),
            f"{r['tok_s']:.1f}",
            f"{r['speedup']:.2f}x",
            "-" if acc is None else f"{acc:.0%}",
            f"{r['tokens_per_step']:.2f}",
            "yes" if r["identical"] else "NO",
        )
    console.print(table)
    best = max(rows[1:], key=lambda r: float(r["speedup"]))  # type: ignore[arg-type]
    console.print(f"best: {best['name']} at {best['speedup']:.2f}x the baseline")


def main() -> int:
    """Run the benchmark; exit status 1 if any worker's tokens differ from the baseline's."""
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    console = Console()

    target = build_model(args.preset, device=args.device)
    cfg = target.cfg
    prompts = make_prompts(args.prompts, cfg.vocab_size, args.seed)
    spec = SpecConfig(max_draft_len=args.draft_len, draft_layers=args.draft_layers)
    console.print(
        f"target: {args.preset} ({cfg.n_layers} layers, dim {cfg.dim}, vocab {cfg.vocab_size}), "
        f"{args.device}, batch {args.batch_size}, {len(prompts)} prompts x {args.new_tokens} "
        f"new tokens, K={args.draft_len}, draft layers={args.draft_layers}, "
        f"threads={torch.get_num_threads()}"
    )
    with torch.inference_mode():
        run_baseline(target, prompts[:1], 8, 1, args.device)  # warm-up
        base_tokens, base_s = run_baseline(
            target, prompts, args.new_tokens, args.batch_size, args.device
        )
        total = sum(len(t) for t in base_tokens)
        rows: list[dict[str, object]] = [
            {
                "name": "greedy (baseline)",
                "tok_s": total / base_s,
                "speedup": 1.0,
                "acceptance": None,
                "tokens_per_step": 1.0,
                "identical": True,
            }
        ]
        with console.status("") as status:
            for name in args.workers.split(","):
                status.update(f"running {name} ...")
                tokens, secs, engine = run_worker(WORKERS[name], target, prompts, spec, args)
                gen_steps = engine.stats.steps - len(prompts)  # minus one prefill step each
                rows.append(
                    {
                        "name": name,
                        "tok_s": total / secs,
                        "speedup": base_s / secs,
                        "acceptance": engine.stats.acceptance_rate,
                        "tokens_per_step": (total - len(prompts)) / max(gen_steps, 1),
                        "identical": tokens == base_tokens,
                    }
                )

    print_table(console, rows)
    if args.json:
        args.json.write_text(
            json.dumps({"args": vars(args) | {"json": str(args.json)}, "rows": rows}, indent=2)
        )
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
