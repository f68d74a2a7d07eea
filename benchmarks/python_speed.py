#!/usr/bin/env python3
"""How fast is `gpulint check` on Python code, per core in CPU time, next to flake8, Ruff and the parse alone?

Times, on each corpus it finds, the best of `--repeat` runs of:

* tree-sitter-python's parse of every file and nothing else: the floor of a tree-sitter frontend
  (every other figure is also given as a multiple of its CPU time, "x parse");
* `python -m gpulint check --select ALL --min-bytes 0 --no-cache --jobs 1 --format json FILES`
  (every rule, one core, interpreter start-up included);
* `gpulint.engine.check_paths(FILES, Settings(jobs=1, select ALL))` in this process;
* `ruff check --no-cache --isolated` with its default rules and with `--select ALL`, on one
  thread (RAYON_NUM_THREADS=1);
* `python -m flake8 --jobs 1 --isolated` (best of `--slow-repeat`: about 90 s per run on torch).

Under each corpus's table, where gpulint's in-process time goes (parse, lowering in the Python
frontend, rules, the rest); after the tables, the CLI's start-up (`gpulint check` of a one-line
file, next to `python -c pass`), which every CLI row includes.

CPU time is user+sys of the tool's process and its children (`getrusage`), so it is per core
whatever a tool does with threads; wall time is printed next to it. With `--instructions`, the
instructions the CLI's process executes on each corpus are counted too (valgrind's callgrind, the
hash seed fixed): the same figure run after run, to compare two versions on a busy machine. The
corpora:

* `generated`: Python GPU programs this script writes (PyTorch training and evaluation scripts,
  `nn.Module` libraries, data pipelines, CuPy, Numba and cuda-python code, some with deliberate
  memory waste; text in benchmarks/templates/python/), deterministic for `--seed`, `--files` and
  `--lines-per-file`;
* `examples`: a checkout of pytorch/examples (`--examples DIR`, $GPULINT_PYTORCH_EXAMPLES, or a
  usual place), never downloaded by this script;
* `torch`: torch's own Python sources, the installed package's folder (found without importing
  it) or `--torch DIR`.

The target (issue 19, point 3) is 60,000 lines/s per core in CPU time; the script prints gpulint's
figure per corpus and over the real corpora together, with how far each is from the parse-only
floor. A corpus or tool that is absent is skipped with a message; missing the target is reported,
never an error: this is a benchmark, not a test, and it always exits 0.

    python benchmarks/python_speed.py                          # every corpus found
    python benchmarks/python_speed.py --corpus examples --examples ~/src/examples --repeat 5
    python benchmarks/python_speed.py --corpus generated --files 400 --out /tmp/pycorpus
    python benchmarks/python_speed.py --corpus examples --repeat 9 --instructions
"""
from __future__ import annotations

import argparse
import gc
import io
import json
import keyword
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (  # noqa: E402  (the harness and the templates live next to this script)
    REPO,
    exit_error,
    gpulint_env,
    machine_description,
    mark_folder,
    prepare_out_folder,
    print_machine,
    today,
)
from templating import load, render  # noqa: E402

MARKER = ".gpulint-python-benchmark-corpus"
OTHER_MARKERS = {".gpulint-benchmark-corpus": "static_speed.py's CUDA corpus"}  # not ours to overwrite
FLAKE8_ARGS = ["--jobs", "1", "--isolated", "--max-line-length", "120"]

# templates/python/*.py.tmpl: the text of the programs, by section
TORCH = load("python/torch.py.tmpl")
TORCH_EVAL = load("python/torch_eval.py.tmpl")
TORCH_MODULES = load("python/torch_modules.py.tmpl")
TORCH_DATA = load("python/torch_data.py.tmpl")
CUPY = load("python/cupy.py.tmpl")
NUMBA = load("python/numba.py.tmpl")
CUDA_PYTHON = load("python/cuda_python.py.tmpl")


# =============================================================================== imports of a program


# name -> (kind, module, imported name or None, alias or None); kind "import" or "from"
IMPORTS: dict[str, tuple[str, str, str | None, str | None]] = {
    "argparse": ("import", "argparse", None, None),
    "ctypes": ("import", "ctypes", None, None),
    "json": ("import", "json", None, None),
    "math": ("import", "math", None, None),
    "os": ("import", "os", None, None),
    "random": ("import", "random", None, None),
    "sys": ("import", "sys", None, None),
    "time": ("import", "time", None, None),
    "contextmanager": ("from", "contextlib", "contextmanager", None),
    "dataclass": ("from", "dataclasses", "dataclass", None),
    "defaultdict": ("from", "collections", "defaultdict", None),
    "Path": ("from", "pathlib", "Path", None),
    "np": ("import", "numpy", None, "np"),
    "torch": ("import", "torch", None, None),
    "nn": ("from", "torch", "nn", None),
    "F": ("import", "torch.nn.functional", None, "F"),
    "DataLoader": ("from", "torch.utils.data", "DataLoader", None),
    "Dataset": ("from", "torch.utils.data", "Dataset", None),
    "TensorDataset": ("from", "torch.utils.data", "TensorDataset", None),
    "cp": ("import", "cupy", None, "cp"),
    "cuda": ("from", "numba", "cuda", None),
    "float32": ("from", "numba", "float32", None),
    "int32": ("from", "numba", "int32", None),
    "create_xoroshiro128p_states": ("from", "numba.cuda.random", "create_xoroshiro128p_states", None),
    "xoroshiro128p_uniform_float32": ("from", "numba.cuda.random", "xoroshiro128p_uniform_float32", None),
    "driver": ("from", "cuda.bindings", "driver", None),
    "nvrtc": ("from", "cuda.bindings", "nvrtc", None),
}
STDLIB = {"argparse", "ctypes", "json", "math", "os", "random", "sys", "time", "contextlib", "dataclasses",
          "collections", "pathlib"}


def free_names(code: str) -> set[str]:
    """Names the code reads that are not attributes (`x.name`), keywords or in strings/comments."""
    names: set[str] = set()
    previous = ""
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.NAME and previous != "." and not keyword.iskeyword(tok.string):
            names.add(tok.string)
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            previous = tok.string
    return names


def import_block(code: str, cudart_style: str) -> str:
    """The imports `code` needs, and only those: stdlib, then third-party, isort-like."""
    table = dict(IMPORTS)
    table["cudart"] = (("from", "cuda.bindings", "runtime", "cudart") if cudart_style == "bindings"
                       else ("from", "cuda", "cudart", None))
    used = sorted(free_names(code) & set(table))
    groups: dict[bool, tuple[list[str], dict[str, list[str]]]] = {True: ([], {}), False: ([], {})}
    for name in used:
        kind, module, what, alias = table[name]
        plain, froms = groups[module.split(".")[0] in STDLIB]
        if kind == "import":
            plain.append(f"import {module}" + (f" as {alias}" if alias else ""))
        else:
            froms.setdefault(module, []).append(what + (f" as {alias}" if alias else ""))
    blocks = []
    for std in (True, False):
        plain, froms = groups[std]
        lines = sorted(plain, key=lambda s: s.split()[1])
        lines += [f"from {m} import {', '.join(sorted(froms[m]))}" for m in sorted(froms)]
        if lines:
            blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


# =============================================================================== context


@dataclass
class Piece:
    code: str
    main: str = ""  # lines for main()
    hooks: dict[str, str] = field(default_factory=dict)  # hook name -> lines


@dataclass
class Ctx:
    rng: Random
    index: int
    dev: str  # the device variable: device, dev
    waste: list[str]  # deliberate waste patterns in this file
    cudart_style: str = "bindings"
    used: set[str] = field(default_factory=set)
    constants: dict[str, str] = field(default_factory=dict)

    def unique(self, stem: str) -> str:
        name, k = stem, 2
        while name in self.used:
            name = f"{stem}{k}"
            k += 1
        self.used.add(name)
        return name

    def pick(self, *options):
        return self.rng.choice(options)

    def const(self, name: str, value: object) -> str:
        self.constants.setdefault(name, str(value))
        return name

    def wants(self, pattern: str) -> bool:
        return pattern in self.waste


def constants_block(ctx: Ctx) -> str:
    return "\n".join(f"{k} = {v}" for k, v in ctx.constants.items())


def assemble(ctx: Ctx, doc: str, pieces: list[str], tail: str = 'if __name__ == "__main__":\n    main()') -> str:
    body_parts = ([constants_block(ctx)] if ctx.constants else []) + [p for p in pieces if p.strip()]
    body = "\n\n\n".join(body_parts) + ("\n\n\n" + tail if tail else "") + "\n"
    imports = import_block(body, ctx.cudart_style)
    doc = doc if "\n\n" in doc.strip() else doc.strip()  # one line: closing quotes on it
    return f'"""{doc}"""\n' + (imports + "\n\n" if imports else "") + ("\n" if imports else "") + body


def fnum(x: float) -> str:
    return repr(round(x, 6))


# =============================================================================== torch: shared pieces


@dataclass
class Task:
    kind: str  # tabular, image, lm
    classes: str  # the constant naming the number of outputs
    model_args: str
    probe: str  # an input batch of 16 made on the device, as an expression with {dev}
    host_probe: str  # the same made on the host
    loss: str  # loss of `logits` against `targets`, per element mean
    loss_sum: str
    correct: str
    count: str


def make_task(ctx: Ctx, kind: str) -> Task:
    d = ctx.dev
    if kind == "tabular":
        ctx.const("IN_FEATURES", ctx.pick(16, 32, 64, 128, 256))
        ctx.const("NUM_CLASSES", ctx.pick(2, 5, 10, 20))
        return Task(kind, "NUM_CLASSES", "IN_FEATURES, NUM_CLASSES",
                    f"torch.randn(16, IN_FEATURES, device={d})", "torch.randn(16, IN_FEATURES)",
                    "F.cross_entropy(logits, targets)", 'F.cross_entropy(logits, targets, reduction="sum")',
                    "(logits.argmax(dim=1) == targets).sum().item()", "targets.size(0)")
    if kind == "image":
        ctx.const("CHANNELS", 3)
        ctx.const("IMAGE_SIZE", ctx.pick(28, 32, 64))
        ctx.const("NUM_CLASSES", ctx.pick(10, 100, 200))
        return Task(kind, "NUM_CLASSES", "CHANNELS, NUM_CLASSES",
                    f"torch.rand(16, CHANNELS, IMAGE_SIZE, IMAGE_SIZE, device={d})",
                    "torch.rand(16, CHANNELS, IMAGE_SIZE, IMAGE_SIZE)",
                    "F.cross_entropy(logits, targets)", 'F.cross_entropy(logits, targets, reduction="sum")',
                    "(logits.argmax(dim=1) == targets).sum().item()", "targets.size(0)")
    ctx.const("VOCAB_SIZE", ctx.pick(256, 512, 1024, 4096))
    ctx.const("SEQ_LEN", ctx.pick(32, 64, 128))
    return Task(kind, "VOCAB_SIZE", "VOCAB_SIZE",
                f"torch.randint(0, VOCAB_SIZE, (16, SEQ_LEN), device={d})",
                "torch.randint(0, VOCAB_SIZE, (16, SEQ_LEN))",
                "F.cross_entropy(logits.reshape(-1, VOCAB_SIZE), targets.reshape(-1))",
                'F.cross_entropy(logits.reshape(-1, VOCAB_SIZE), targets.reshape(-1), reduction="sum")',
                "(logits.argmax(dim=-1) == targets).sum().item()", "targets.numel()")


def model_mlp(ctx: Ctx) -> tuple[str, str]:
    name = ctx.unique(ctx.pick("MLPClassifier", "FeedForwardNet", "TabularNet", "DenseClassifier"))
    code = render(TORCH["mlp"], name=name, depth=ctx.pick(2, 3, 4), hidden=ctx.pick(128, 256, 512),
                  dropout=ctx.pick(0.0, 0.1, 0.2), norm=ctx.pick("LayerNorm", "BatchNorm1d"),
                  act=ctx.pick("ReLU", "GELU", "SiLU"))
    return name, code


def model_cnn(ctx: Ctx) -> tuple[str, str]:
    name = ctx.unique(ctx.pick("SmallConvNet", "ConvClassifier", "TinyResNet", "SimpleCNN"))
    act = ctx.pick("ReLU", "SiLU", "ReLU6")
    code = render(TORCH["cnn"], name=name, act=act, width=ctx.pick(16, 32, 64), dropout=ctx.pick(0.1, 0.25, 0.5))
    return name, code


def module_posenc(ctx: Ctx) -> tuple[str, str]:
    name = ctx.unique(ctx.pick("PositionalEncoding", "SinusoidalPositions", "PosEncoding"))
    code = render(TORCH["positional_encoding"], name=name, max_len=ctx.pick(512, 1024, 2048))
    return name, code


def model_lm(ctx: Ctx) -> tuple[str, list[str]]:
    if ctx.rng.random() < 0.3:
        name = ctx.unique(ctx.pick("GRULanguageModel", "RecurrentLM", "CharGRU"))
        code = render(TORCH["gru_lm"], name=name, dim=ctx.pick(128, 256, 384), layers=ctx.pick(2, 3),
                      dropout=ctx.pick(0.1, 0.2))
        return name, [code]
    pe, pe_code = module_posenc(ctx)
    name = ctx.unique(ctx.pick("TinyTransformerLM", "CausalTransformer", "DecoderOnlyLM", "MiniGPT"))
    code = render(TORCH["transformer_lm"], name=name, pe=pe, dim=ctx.pick(128, 256, 512), heads=ctx.pick(4, 8),
                  layers=ctx.pick(2, 4, 6), dropout=ctx.pick(0.0, 0.1), max_len=ctx.pick(256, 512))
    return name, [pe_code, code]


def task_model(ctx: Ctx, task: Task) -> tuple[str, list[str]]:
    if task.kind == "tabular":
        name, code = model_mlp(ctx)
        return name, [code]
    if task.kind == "image":
        name, code = model_cnn(ctx)
        return name, [code]
    return model_lm(ctx)


def set_seed_piece(ctx: Ctx) -> str:
    extra = ctx.pick("", "torch.backends.cudnn.benchmark = False\ntorch.backends.cudnn.deterministic = True",
                     "torch.backends.cudnn.benchmark = True")
    return render(TORCH["set_seed"], extra=extra)


def loaders_piece(ctx: Ctx, task: Task) -> str:
    if task.kind == "tabular":
        data = render(TORCH["data_tabular"], noise=ctx.pick(0.05, 0.1, 0.3))
        xs, ys = "features", "labels"
    elif task.kind == "image":
        data = render(TORCH["data_image"], mult=ctx.pick(7, 13, 31))
        xs, ys = "images", "labels"
    else:
        data = render(TORCH["data_lm"])
        xs, ys = "inputs", "shifted"
    return render(TORCH["make_loaders"], kind=task.kind, data=data, xs=xs, ys=ys)


def train_piece(ctx: Ctx, task: Task) -> str:
    d = ctx.dev
    before, inputs_line, loss = "", f"inputs = inputs.to({d}, non_blocking=True)", task.loss
    if ctx.wants("const_to"):
        if task.kind == "image" and ctx.rng.random() < 0.6:
            ctx.const("CHANNEL_MEAN", "(0.4914, 0.4822, 0.4465)")
            ctx.const("CHANNEL_STD", "(0.2470, 0.2435, 0.2616)")
            before = ("mean = torch.tensor(CHANNEL_MEAN).view(1, -1, 1, 1)\n"
                      "std = torch.tensor(CHANNEL_STD).view(1, -1, 1, 1)")
            inputs_line = f"inputs = (inputs.to({d}, non_blocking=True) - mean.to({d})) / std.to({d})"
        else:
            before = f"class_weights = torch.ones({task.classes})\nclass_weights[0] = {ctx.pick(0.5, 0.25, 2.0)}"
            loss = loss[:-1] + f", weight=class_weights.to({d}))"
    flush = ""
    if ctx.wants("empty_cache") and ctx.rng.random() < 0.5:
        flush = "if step % args.log_every == 0:\n    torch.cuda.empty_cache()"
    clip = ctx.pick("if args.clip > 0:\n    scaler.unscale_(optimizer)\n"
                    "    torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)", "")
    return render(TORCH["train_one_epoch"], dev=d, before=before, inputs_line=inputs_line, loss=loss, clip=clip,
                  correct=task.correct, count=task.count, flush=flush)


def evaluate_piece(ctx: Ctx, task: Task) -> str:
    return render(TORCH["evaluate"], dev=ctx.dev, loss_sum=task.loss_sum, correct=task.correct, count=task.count)


def checkpoint_piece(ctx: Ctx) -> str:
    return render(TORCH["save_checkpoint"])


# ------------------------------------------------------------------ torch extras (utilities)


def x_count_parameters(ctx: Ctx) -> Piece:
    name = ctx.unique("count_parameters")
    code = render(TORCH["count_parameters"], name=name)
    return Piece(code, hooks={"model": f'print(f"{{{name}(model) / 1e6:.2f}}M trainable parameters")'})


def x_gpu_memory(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("log_gpu_memory", "report_memory", "memory_summary"))
    code = render(TORCH["gpu_memory"], name=name, dev=ctx.dev)
    return Piece(code, hooks={"epoch": f'{name}({ctx.dev}, prefix=f"epoch {{epoch}}: ")'})


def x_timer(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("CudaTimer", "Stopwatch", "SyncTimer"))
    code = render(TORCH["timer"], name=name)
    return Piece(code)


def x_average_meter(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("AverageMeter", "RunningAverage", "MetricTracker"))
    code = render(TORCH["average_meter"], name=name)
    return Piece(code)


def x_env_info(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("environment_info", "describe_environment", "runtime_info"))
    code = render(TORCH["env_info"], name=name)
    return Piece(code, hooks={"start": f"print(json.dumps({name}(), indent=2))"})


def x_topk(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("topk_accuracy", "accuracy_at_k"))
    code = render(TORCH["topk_accuracy"], name=name)
    return Piece(code)


def x_grad_norm(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("global_grad_norm", "gradient_norm"))
    code = render(TORCH["grad_norm"], name=name)
    return Piece(code, hooks={"epoch": f'print(f"gradient norm after epoch {{epoch}}: {{{name}(model):.3f}}")'})


def x_warmup_cosine(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("warmup_cosine", "cosine_with_warmup", "lr_lambda"))
    code = render(TORCH["warmup_cosine"], name=name, floor=ctx.pick(0.0, 0.01, 0.05))
    return Piece(code)


def x_mixup(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("mixup_batch", "mixup"))
    code = render(TORCH["mixup"], name=name, alpha=ctx.pick(0.2, 0.4, 1.0))
    return Piece(code)


def x_load_checkpoint(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("load_checkpoint", "restore"))
    code = render(TORCH["load_checkpoint"], name=name)
    return Piece(code)


def x_snapshot(ctx: Ctx) -> Piece:
    """GL007 when waste is on: zeros, then copy_ over all of it."""
    name = ctx.unique(ctx.pick("flatten_parameters", "snapshot_parameters", "parameter_vector"))
    if ctx.wants("zeros_copy"):
        body = render(TORCH["snapshot_zeros_copy"], dev=ctx.dev)
    else:
        body = "return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()"
    code = render(TORCH["snapshot"], name=name, dev=ctx.dev, body=body)
    var = ctx.unique("initial_params")
    return Piece(code, hooks={"model": f"{var} = {name}(model, {ctx.dev})",
                              "after": f"moved = ({name}(model, {ctx.dev}) - {var}).norm().item()\n"
                                       f'print(f"parameters moved by {{moved:.4f}} in L2 norm")'})


def x_ema(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("ModelEMA", "WeightAverager", "ExponentialAverage"))
    code = render(TORCH["ema"], name=name, decay=ctx.pick(0.99, 0.999, 0.9995))
    var = ctx.unique("ema")
    return Piece(code, hooks={"model": f"{var} = {name}(model)", "epoch": f"{var}.update(model)"})


TORCH_EXTRAS: list[Callable[[Ctx], Piece]] = [
    x_count_parameters, x_gpu_memory, x_timer, x_average_meter, x_env_info, x_topk, x_grad_norm,
    x_warmup_cosine, x_mixup, x_load_checkpoint, x_snapshot, x_ema,
]


def waste_hooks(ctx: Ctx, task: Task) -> dict[str, list[str]]:
    """Setup/epoch/after lines of main() with the file's deliberate waste."""
    d = ctx.dev
    hooks: dict[str, list[str]] = {"setup": [], "epoch": [], "after": []}
    if ctx.wants("early"):  # GL001: made before the epoch loop, first used after it
        if ctx.rng.random() < 0.5:
            hooks["setup"].append(f"prediction_counts = torch.zeros({task.classes}, device={d})")
            hooks["after"].append(render(TORCH["early_prediction_counts"], dev=d, classes=task.classes))
        else:
            hooks["setup"].append(f"edges = torch.linspace(0.0, 1.0, 11, device={d})")
            hooks["after"].append(render(TORCH["early_confidence_histogram"], dev=d))
    if ctx.wants("probe"):  # GL006: used before and after the loop that does not use it
        hooks["setup"].append(render(TORCH["probe_before"], probe=task.probe))
        hooks["after"].append(render(TORCH["probe_after"]))
    if ctx.wants("host_randn"):  # GL102: made on the host only to be copied
        hooks["setup"].append(render(TORCH["host_warmup"], host=task.host_probe, move=ctx.pick("cuda()", f"to({d})")))
    if ctx.wants("empty_cache"):
        hooks["epoch"].append("torch.cuda.empty_cache()")
    return hooks


def gen_train(ctx: Ctx, target: int) -> tuple[str, str]:
    task = make_task(ctx, ctx.pick("tabular", "tabular", "image", "image", "lm"))
    model, model_code = task_model(ctx, task)
    optim = ctx.pick(
        "optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)",
        "optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9,\n"
        "                            weight_decay=args.weight_decay, nesterov=True)",
        "optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)")
    sched = ctx.pick("torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)",
                     "torch.optim.lr_scheduler.StepLR(optimizer, step_size=max(1, args.epochs // 3), gamma=0.1)",
                     "torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.95)")
    fixed = model_code + [set_seed_piece(ctx), loaders_piece(ctx, task), train_piece(ctx, task),
                          evaluate_piece(ctx, task), checkpoint_piece(ctx)]
    args = render(TORCH["parse_args"], desc=f"Train a {model} on synthetic {task.kind} data.",
                  epochs=ctx.pick(10, 20, 30, 90), bs=ctx.pick(64, 128, 256, 512), lr=ctx.pick(1e-3, 3e-4, 0.1, 0.05),
                  wd=ctx.pick(0.0, 1e-4, 0.01, 0.05), samples=ctx.pick(10000, 20000, 50000),
                  workers=ctx.pick(2, 4, 8), clip=ctx.pick(0.0, 1.0, 5.0), log_every=ctx.pick(50, 100, 200),
                  seed=ctx.rng.randrange(10000), out=ctx.pick("checkpoints", "runs/last"))
    wh = waste_hooks(ctx, task)

    def main_code(extra_hooks: list[dict[str, str]]) -> str:
        hooks = {k: list(v) for k, v in wh.items()}
        for h in extra_hooks:
            for k, v in h.items():
                hooks.setdefault(k, []).append(v)
        return render(TORCH["main"], dev=ctx.dev, model=model, margs=task.model_args, optim=optim, sched=sched,
                      start="\n".join(hooks.get("start", [])), model_hooks="\n".join(hooks.get("model", [])),
                      setup="\n".join(hooks["setup"]), epoch_hooks="\n".join(hooks["epoch"]),
                      after="\n".join(hooks["after"]))

    extras = fill_extras(ctx, TORCH_EXTRAS, fixed + [args], main_code, target,
                         forced=[x_snapshot] if ctx.wants("zeros_copy") else [])
    doc = (f"Train {model} on synthetic {task.kind} data with mixed precision and checkpointing.\n\n"
           f"Usage: python train.py --epochs N --batch-size B [--amp]\n")
    return f"train_{task.kind}_{model.lower()}", assemble(ctx, doc, fixed + [e.code for e in extras] + [args]
                                                          + [main_code([e.hooks for e in extras])])


def fill_extras(ctx: Ctx, pool: list[Callable[[Ctx], Piece]], fixed: list[str],
                main_code: Callable[[list[dict[str, str]]], str], target: int,
                forced: list[Callable[[Ctx], Piece]] = ()) -> list[Piece]:
    """Adds extras from `pool` until the file (estimated) reaches `target` lines; `forced` come first,
    whatever the target (they carry the file's deliberate waste)."""
    overhead = 12 + len(ctx.constants)  # docstring, imports, blank lines, the __main__ guard

    def size(extras: list[Piece]) -> int:
        parts = fixed + [e.code for e in extras] + [main_code([e.hooks for e in extras])]
        return overhead + sum(p.count("\n") + 3 for p in parts)

    extras: list[Piece] = [make(ctx) for make in forced]
    order = [make for make in pool if make not in forced]
    ctx.rng.shuffle(order)
    first_pass = True
    while size(extras) < target:
        if not order:  # every extra used once: more of them, without their hooks
            order = [make for make in pool if make not in forced]
            ctx.rng.shuffle(order)
            first_pass = False
        piece = order.pop()(ctx)
        if not first_pass:
            piece = Piece(piece.code)
        if size(extras + [piece]) > target + 40 and size(extras) >= target - 40:
            break
        extras.append(piece)
    return extras


# =============================================================================== torch: evaluation


def gen_eval(ctx: Ctx, target: int) -> tuple[str, str]:
    task = make_task(ctx, ctx.pick("tabular", "image", "image", "lm"))
    model, model_code = task_model(ctx, task)
    d = ctx.dev
    ctx.const("BATCH_SIZES", ctx.pick("(1, 8, 32, 128)", "(1, 4, 16, 64, 256)", "(16, 64, 256)"))
    ctx.const("TIMED_ITERS", ctx.pick(50, 100, 200))
    # inputs as produced by the synthetic loader, and their normalisation
    if task.kind == "image":
        norm_before = ("mean = torch.tensor((0.485, 0.456, 0.406)).view(1, 3, 1, 1)\n"
                       "std = torch.tensor((0.229, 0.224, 0.225)).view(1, 3, 1, 1)")
        if ctx.wants("const_to"):
            norm_line = f"inputs = (inputs.to({d}) - mean.to({d})) / std.to({d})"
        else:
            norm_before = norm_before.replace(")\n", f").to({d})\n") + f".to({d})"
            norm_line = f"inputs = (inputs.to({d}) - mean) / std"
        data = "torch.rand(args.samples, CHANNELS, IMAGE_SIZE, IMAGE_SIZE, generator=gen)"
        labels = "(inputs.mean(dim=(1, 2, 3)) * NUM_CLASSES * 7).long() % NUM_CLASSES"
    elif task.kind == "tabular":
        norm_before, norm_line = "", f"inputs = inputs.to({d})"
        data = "torch.randn(args.samples, IN_FEATURES, generator=gen)"
        labels = "(inputs @ torch.randn(IN_FEATURES, NUM_CLASSES, generator=gen)).argmax(dim=1)"
    else:
        norm_before, norm_line = "", f"inputs = inputs.to({d})"
        data = "torch.randint(0, VOCAB_SIZE, (args.samples, SEQ_LEN), generator=gen)"
        labels = "torch.roll(inputs, shifts=-1, dims=1)"
    loss_sum = task.loss_sum
    if ctx.wants("const_to") and task.kind != "image":  # GL103: constant class weights moved every batch
        norm_before = f"class_weights = torch.ones(num_classes)\nclass_weights[0] = {ctx.pick(0.5, 0.25, 2.0)}"
        norm_line += f"\nweights = class_weights.to({d})"
        loss_sum = loss_sum.replace("logits.reshape(-1, VOCAB_SIZE)", "logits.flatten(0, 1)")
        loss_sum = loss_sum.replace("targets.reshape(-1)", "targets.flatten()")[:-1] + ", weight=weights)"
    early_made = early_used = ""
    if ctx.wants("early"):  # GL001: made before the loop over batches, first used after it
        early_made = f"class_ids = torch.arange(num_classes, device={d})"
        early_used = ("recall = confusion.diag() / confusion.sum(dim=1).clamp_min(1)\n"
                      'print("hardest classes", class_ids[torch.argsort(recall)[:5]].tolist())')
    if task.kind == "lm":
        confusion_update = render(TORCH_EVAL["lm_confusion_update"])
    else:
        confusion_update = "preds = logits.argmax(dim=-1)\ntruth = targets"
    split_code = render(TORCH_EVAL["synthetic_split"], data=data, labels=labels)
    metrics_code = render(TORCH_EVAL["collect_metrics"], dev=d, norm_before=norm_before, norm_line=norm_line,
                          loss_sum=loss_sum, confusion_update=confusion_update, early_made=early_made,
                          early_used=early_used)
    report_code = render(TORCH_EVAL["per_class_report"], top=ctx.pick(3, 5, 10))
    fixed = model_code + [split_code, metrics_code, report_code]
    bench_input = f"{task.host_probe.replace('16', 'batch_size', 1)}.cuda()" if ctx.wants("host_randn") else \
        task.probe.replace("16", "batch_size", 1)
    flush = "torch.cuda.empty_cache()\n" if ctx.wants("empty_cache") else ""
    fixed.append(render(TORCH_EVAL["benchmark_latency"], dev=d, flush=flush, bench_input=bench_input))
    args = render(TORCH_EVAL["parse_args"], model=model,
                  ckpt=ctx.pick("checkpoints/best.pt", "model.pt", "runs/last/checkpoint_009.pt"),
                  samples=ctx.pick(2000, 5000, 10000), bs=ctx.pick(128, 256, 512), seed=ctx.rng.randrange(10000),
                  results=ctx.pick("eval.json", "metrics.json"))

    def main_code(extra_hooks: list[dict[str, str]]) -> str:
        hooks: dict[str, list[str]] = {}
        for h in extra_hooks:
            for k, v in h.items():
                hooks.setdefault(k, []).append(v)
        return render(TORCH_EVAL["main"], dev=d, model=model, margs=task.model_args, classes=task.classes,
                      model_hooks="\n".join(hooks.get("model", [])), after="\n".join(hooks.get("after", [])))

    pool = [x_count_parameters, x_timer, x_average_meter, x_env_info, x_topk, x_load_checkpoint, x_eval_calib]
    extras = fill_extras(ctx, pool, fixed + [args], main_code, target)
    doc = f"Evaluate {model}: accuracy, per-class F1 and inference latency per batch size.\n"
    return f"eval_{task.kind}_{model.lower()}", assemble(ctx, doc, fixed + [e.code for e in extras] + [args]
                                                         + [main_code([e.hooks for e in extras])])


def x_eval_calib(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("expected_calibration_error", "calibration_error"))
    code = render(TORCH_EVAL["calibration_error"], name=name, bins=ctx.pick(10, 15, 20))
    return Piece(code)


# =============================================================================== torch: module libraries


def lib_modules(ctx: Ctx) -> list[Callable[[Ctx], tuple[str, str, str]]]:
    """Generators of (class name, code, smoke-test lines); a test makes `x` and calls the module."""
    d = ctx.dev

    def make_input(shape: str) -> str:
        if ctx.wants("host_randn") and ctx.rng.random() < 0.5:
            return f"torch.randn({shape}).cuda()"
        return f"torch.randn({shape}, device={d})"

    def posenc(c: Ctx):
        name, code = module_posenc(c)
        return name, code, f"y = {name}(64)({make_input('2, 16, 64')})"

    def running_norm(c: Ctx):
        name = c.unique(c.pick("RunningNorm", "StreamingStandardizer", "OnlineNorm"))
        code = render(TORCH_MODULES["running_norm"], name=name, momentum=c.pick(0.01, 0.05, 0.1))
        return name, code, f"y = {name}(32).to({d})({make_input('8, 32')})"

    def attention(c: Ctx):
        name = c.unique(c.pick("CausalSelfAttention", "MaskedAttention", "SelfAttention"))
        code = render(TORCH_MODULES["attention"], name=name, heads=c.pick(4, 8), max_len=c.pick(256, 512, 1024),
                      dropout=c.pick(0.0, 0.1))
        return name, code, f"y = {name}(64).to({d})({make_input('2, 32, 64')})"

    def rotary(c: Ctx):
        name = c.unique(c.pick("RotaryEmbedding", "RoPE", "RotaryPositions"))
        code = render(TORCH_MODULES["rotary"], name=name, max_len=c.pick(2048, 4096, 8192))
        return name, code, f"y = {name}(32).to({d})({make_input('2, 16, 32')})"

    def squeeze_excite(c: Ctx):
        name = c.unique(c.pick("SqueezeExcite", "SEBlock", "ChannelGate"))
        code = render(TORCH_MODULES["squeeze_excite"], name=name, reduction=c.pick(4, 8, 16))
        return name, code, f"y = {name}(32).to({d})({make_input('2, 32, 8, 8')})"

    def residual(c: Ctx):
        name = c.unique(c.pick("ResidualBlock", "BasicBlock", "PreActBlock"))
        code = render(TORCH_MODULES["residual"], name=name)
        return name, code, f"y = {name}(16, 32, stride=2).to({d})({make_input('2, 16, 32, 32')})"

    def swiglu(c: Ctx):
        name = c.unique(c.pick("SwiGLU", "GatedMLP", "GLUFeedForward"))
        code = render(TORCH_MODULES["swiglu"], name=name, dropout=c.pick(0.0, 0.1))
        return name, code, f"y = {name}(64).to({d})({make_input('2, 16, 64')})"

    def rmsnorm(c: Ctx):
        name = c.unique(c.pick("RMSNorm", "RootMeanSquareNorm"))
        code = render(TORCH_MODULES["rmsnorm"], name=name, eps=c.pick(1e-5, 1e-6))
        return name, code, f"y = {name}(64).to({d})({make_input('2, 16, 64')})"

    def focal(c: Ctx):
        name = c.unique(c.pick("FocalLoss", "SoftmaxFocalLoss"))
        code = render(TORCH_MODULES["focal"], name=name, gamma=c.pick(1.0, 2.0))
        test = (f"targets = torch.randint(0, 10, (8,), device={d})\n"
                f"y = {name}(10).to({d})({make_input('8, 10')}, targets)")
        return name, code, test

    def patch_embed(c: Ctx):
        name = c.unique(c.pick("PatchEmbed", "PatchEmbedding", "ViTStem"))
        code = render(TORCH_MODULES["patch_embed"], name=name, patch=c.pick(4, 8), dim=c.pick(192, 384))
        return name, code, f"y = {name}().to({d})({make_input('2, 3, 32, 32')})"

    def kv_cache(c: Ctx):
        name = c.unique(c.pick("KVCache", "KeyValueCache", "DecodeCache"))
        code = render(TORCH_MODULES["kv_cache"], name=name)
        test = (f"cache = {name}(4, {c.pick(128, 256, 2048)}, 64).to({d})\n"
                f"kv = {make_input('2, 8, 64')}\n"
                f"y, _ = cache(kv, kv)")
        return name, code, test

    def drop_path(c: Ctx):
        name = c.unique(c.pick("DropPath", "StochasticDepth"))
        code = render(TORCH_MODULES["drop_path"], name=name, p=c.pick(0.1, 0.2))
        return name, code, f"y = {name}().to({d})({make_input('4, 16, 64')})"

    def lora(c: Ctx):
        name = c.unique(c.pick("LoRALinear", "LowRankAdapter"))
        code = render(TORCH_MODULES["lora"], name=name, rank=c.pick(4, 8, 16), alpha=c.pick(8, 16, 32))
        return name, code, f"y = {name}(64, 32).to({d})({make_input('4, 64')})"

    def moe(c: Ctx):
        name = c.unique(c.pick("MixtureOfExperts", "SparseMoE", "TopKRouter"))
        code = render(TORCH_MODULES["moe"], name=name, experts=c.pick(4, 8))
        return name, code, f"y = {name}(32).to({d})({make_input('2, 8, 32')})"

    def label_smoothing(c: Ctx):
        name = c.unique(c.pick("LabelSmoothingLoss", "SmoothedCrossEntropy"))
        code = render(TORCH_MODULES["label_smoothing"], name=name, smoothing=c.pick(0.05, 0.1, 0.2))
        test = (f"targets = torch.randint(0, 5, (8,), device={d})\n"
                f"y = {name}()({make_input('8, 5')}, targets)")
        return name, code, test

    return [posenc, running_norm, attention, rotary, squeeze_excite, residual, swiglu, rmsnorm, focal,
            patch_embed, kv_cache, drop_path, lora, moe, label_smoothing]


def gen_modules(ctx: Ctx, target: int) -> tuple[str, str]:
    pool = lib_modules(ctx)
    ctx.rng.shuffle(pool)
    d = ctx.dev
    classes: list[tuple[str, str, str]] = []
    theme = ctx.pick("layers", "blocks", "modules", "components", "nn_utils")

    def smoke(cls: list[tuple[str, str, str]]) -> str:
        tests = []
        for name, _, test in cls:
            tests.append(test + f'\nprint(f"{name}: {{tuple(y.shape)}}")')
        flush = "torch.cuda.empty_cache()" if ctx.wants("empty_cache") else ""
        registry = "".join(f'\n    "{n.lower()}": {n},' for n, _, _ in cls) + "\n"
        checks = "\n\n\n".join(render(TORCH_MODULES["check"], n=i, dev=d, body=t) for i, t in enumerate(tests))
        check_names = "".join(f"\n    check_{i}," for i in range(len(tests)))
        return render(TORCH_MODULES["smoke_test"], registry=registry, dev=d, flush=flush, tests=checks,
                      check_names=check_names)

    while pool:
        cand = pool.pop()(ctx)
        est = 14 + sum(c[1].count("\n") + 3 for c in classes + [cand]) + 30 + 6 * (len(classes) + 1)
        if classes and est > target + 25:
            break
        classes.append(cand)
        if est >= target - 10:
            break
    doc = (f"Reusable {theme} for the models in this project.\n\n"
           f"Every module here is checked by `smoke_test()` on the GPU when one is present.\n")
    text = assemble(ctx, doc, [c[1] for c in classes] + [smoke(classes)],
                    tail='if __name__ == "__main__":\n    smoke_test()')
    return f"{theme}_{classes[0][0].lower()}", text


# =============================================================================== torch: data pipelines


def gen_data(ctx: Ctx, target: int) -> tuple[str, str]:
    d = ctx.dev
    ctx.const("IMAGE_SIZE", ctx.pick(32, 64, 96, 128))
    ctx.const("NUM_CLASSES", ctx.pick(10, 100, 1000))
    ctx.const("MEAN", "(0.485, 0.456, 0.406)")
    ctx.const("STD", "(0.229, 0.224, 0.225)")
    dataset = ctx.unique(ctx.pick("SyntheticImages", "RandomImageDataset", "FakeImageNet", "NoiseImages"))
    prefetcher = ctx.unique(ctx.pick("CUDAPrefetcher", "DevicePrefetcher", "AsyncLoader"))
    pieces = [render(TORCH_DATA["dataset"], dataset=dataset, seed=ctx.rng.randrange(1000)),
              render(TORCH_DATA["prefetcher"], prefetcher=prefetcher, dev=d),
              render(TORCH_DATA["gpu_augment"], flip=ctx.pick(0.5, 0.25), jitter=ctx.pick(0.1, 0.2, 0.4))]
    if ctx.wants("const_to"):
        norm_before = "mean = torch.tensor(MEAN).view(1, 3, 1, 1)\nstd = torch.tensor(STD).view(1, 3, 1, 1)"
        norm = f"images = (images - mean.to({d})) / std.to({d})"
    else:
        norm_before = (f"mean = torch.tensor(MEAN, device={d}).view(1, 3, 1, 1)\n"
                       f"std = torch.tensor(STD, device={d}).view(1, 3, 1, 1)")
        norm = "images = (images - mean) / std"
    early = ctx.wants("early")
    flush = "torch.cuda.empty_cache()" if ctx.wants("empty_cache") else ""
    warm = ""
    if ctx.wants("host_randn"):
        warm = f"warm = torch.rand(64, 3, IMAGE_SIZE, IMAGE_SIZE).to({d})\nchannel_sum += warm.sum() * 0"
    pieces.append(render(TORCH_DATA["measure"], dev=d, norm_before=norm_before, norm=norm, flush=flush, warm=warm,
                         early_made=f"label_hist = torch.zeros(NUM_CLASSES, device={d})" if early else "",
                         early_used=render(TORCH_DATA["label_balance"]) if early else ""))
    args = render(TORCH_DATA["parse_args"], size=ctx.pick(5000, 10000, 50000), bs=ctx.pick(64, 128, 256),
                  workers=ctx.pick(4, 8, 16), epochs=ctx.pick(2, 3, 5))

    def main_code(extra_hooks: list[dict[str, str]]) -> str:
        calls = "\n".join(h["main"] for h in extra_hooks if "main" in h)
        return render(TORCH_DATA["main"], dev=d, dataset=dataset, prefetcher=prefetcher, calls=calls)

    extras = fill_extras(ctx, DATA_EXTRAS, pieces + [args], main_code, target)
    doc = (f"Input pipeline benchmark: {dataset} -> DataLoader -> {prefetcher} -> GPU augmentation.\n\n"
           f"Reports images/s per epoch and the per-channel statistics of what the model would see.\n")
    return f"data_{dataset.lower()}", assemble(ctx, doc, pieces + [e.code for e in extras] + [args]
                                               + [main_code([e.hooks for e in extras])])


def dx_collate(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("pad_collate", "collate_variable_length", "collate_sequences"))
    code = render(TORCH_DATA["collate"], name=name)
    return Piece(code)


def dx_normalize_module(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("GPUNormalize", "NormalizeOnDevice"))
    code = render(TORCH_DATA["normalize_module"], name=name)
    return Piece(code)


def dx_sampler_weights(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("balanced_sample_weights", "inverse_frequency_weights"))
    code = render(TORCH_DATA["sampler_weights"], name=name)
    return Piece(code)


def dx_pinned_pool(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("PinnedBufferPool", "StagingBuffers"))
    code = render(TORCH_DATA["pinned_pool"], name=name, count=ctx.pick(2, 3, 4))
    return Piece(code)


def dx_cutout(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("gpu_cutout", "random_erase"))
    code = render(TORCH_DATA["cutout"], name=name, size=ctx.pick(8, 12, 16))
    return Piece(code)


def dx_loader_stats(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("time_loader_only", "host_side_throughput"))
    code = render(TORCH_DATA["loader_stats"], name=name, batches=ctx.pick(20, 50, 100))
    return Piece(code, hooks={"main": f"{name}(loader)"})


DATA_EXTRAS = [dx_collate, dx_normalize_module, dx_sampler_weights, dx_pinned_pool, dx_cutout, dx_loader_stats,
               x_timer, x_env_info]


# =============================================================================== CuPy


def gen_cupy(ctx: Ctx, target: int) -> tuple[str, str]:
    ctx.const("SEED", ctx.rng.randrange(100000))
    ctx.const("N_POINTS", ctx.pick(100_000, 250_000, 1_000_000))
    ctx.const("DIM", ctx.pick(8, 16, 32, 64))
    ctx.const("TRIALS", ctx.pick(10, 20, 50))
    pieces: list[str] = []
    setup: list[str] = []
    loop: list[str] = []
    after: list[str] = []
    if ctx.wants("asarray_loop"):  # GL103: the host weights go up on every trial
        loop.append("weights = cp.asarray(host_weights)\nprojected = points @ weights")
        loop.append("scores.append(float(projected.std()))")
        setup.append("host_weights = rng.standard_normal((DIM, 4)).astype(np.float32)")
    else:
        setup.append("weights = cp.asarray(rng.standard_normal((DIM, 4)).astype(np.float32))")
        loop.append("projected = points @ weights\nscores.append(float(projected.std()))")
    if ctx.wants("free_all_blocks"):  # GL101: flushing the pool every trial
        loop.append("cp.get_default_memory_pool().free_all_blocks()")
    if ctx.wants("copyto"):  # GL007: zeros, then overwritten in full
        setup.append("centered = cp.zeros((N_POINTS, DIM), dtype=cp.float32)\n"
                     "cp.copyto(centered, points - points.mean(axis=0))")
    else:
        setup.append("centered = points - points.mean(axis=0)")
    setup.append("cov = centered.T @ centered / (N_POINTS - 1)")
    if ctx.wants("early"):  # GL001: made before the trials, used after them
        setup.append("baseline = cp.linalg.norm(points, axis=1)")
        after.append('print("mean norm", float(baseline.mean()))')
    pool = list(CUPY_FUNCS)
    ctx.rng.shuffle(pool)

    def main_code(chosen: list[Piece]) -> str:
        calls = "\n".join(p.main for p in chosen if p.main)
        return render(CUPY["main"], setup="\n".join(setup), loop="\n".join(loop), after="\n".join(after), calls=calls)

    chosen = fill_extras(ctx, pool, pieces, lambda hooks: main_code(chosen_so_far(hooks)), target)
    doc = ctx.pick("GPU array utilities on CuPy: clustering, linear algebra and signal processing.\n",
                   "Numerical experiments with CuPy: custom kernels next to cuBLAS/cuFFT-backed calls.\n",
                   "CuPy port of the NumPy analysis pipeline; results are copied back only at the end.\n")
    body = pieces + [p.code for p in chosen] + [main_code(chosen)]
    return f"cupy_{ctx.pick('analysis', 'kernels', 'linalg', 'pipeline', 'clustering')}", assemble(ctx, doc, body)


def chosen_so_far(hooks: list[dict[str, str]]) -> list[Piece]:
    """fill_extras hands main_code the hooks; the CuPy/Numba/cuda-python mains take pieces."""
    return [Piece("", main=h.get("main", "")) for h in hooks]


def cupy_piece(code: str, main: str = "") -> Piece:
    return Piece(code, main=main, hooks={"main": main} if main else {})


def cx_pairwise(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("pairwise_sq_dists", "squared_distances"))
    return cupy_piece(render(CUPY["pairwise"], name=name),
                      f'print("nearest pair", float({name}(points[:512], points[512:1024]).min()))')


def cx_kmeans(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("kmeans", "lloyd", "cluster_points"))
    return cupy_piece(render(CUPY["kmeans"], name=name, k=ctx.pick(8, 16, 32), iters=ctx.pick(10, 20, 50)),
                      f'centers, labels = {name}(points)\nprint("cluster sizes", cp.asnumpy(cp.bincount(labels))[:8])')


def cx_power(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("power_iteration", "top_eigenvalue"))
    return cupy_piece(render(CUPY["power"], name=name, iters=ctx.pick(100, 200, 500)),
                      f'print("top eigenvalue", {name}(cov))')


def cx_cg(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("conjugate_gradient", "cg_solve"))
    return cupy_piece(render(CUPY["cg"], name=name, max_iter=ctx.pick(200, 500, 1000)),
                      f"solution = {name}(cov + cp.eye(DIM, dtype=cov.dtype), cp.ones(DIM, dtype=cov.dtype))\n"
                      f'print("residual", float(cp.linalg.norm((cov + cp.eye(DIM)) @ solution - 1.0)))')


def cx_fft(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("lowpass", "fft_lowpass", "spectral_filter"))
    return cupy_piece(render(CUPY["fft"], name=name, cutoff=ctx.pick(0.1, 0.25, 0.5)),
                      f'print("smoothed std", float({name}(points.T).std()))')


def cx_softmax(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("softmax_rows", "row_softmax"))
    return cupy_piece(render(CUPY["softmax"], name=name),
                      f'print("max probability", float({name}(points[:1000]).max()))')


def cx_elementwise(ctx: Ctx) -> Piece:
    kern = ctx.unique(ctx.pick("_saxpy", "_axpy_kernel", "_fused_axpy"))
    name = ctx.unique(ctx.pick("saxpy", "axpy", "scaled_add"))
    ctx.const(kern.upper(), f'cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", '
              f'"z = a * x + y", "{kern.strip("_")}")')
    return cupy_piece(render(CUPY["elementwise"], name=name, KERN=kern.upper()),
                      f'print("axpy checksum", float({name}(2.0, points[:, 0], points[:, 1]).sum()))')


def cx_raw(ctx: Ctx) -> Piece:
    src = ctx.unique("_SCALE_ROWS_SRC")
    kern = ctx.unique("_SCALE_ROWS")
    name = ctx.unique(ctx.pick("scale_rows", "row_scale"))
    threads = ctx.pick(128, 256)
    code = render(CUPY["raw"], src=src, kern=kern, name=name, threads=threads)
    return cupy_piece(code, f'print("scaled", float({name}(points[:1024], cp.arange(1024)).sum()))')


def cx_reduction(ctx: Ctx) -> Piece:
    kern = ctx.unique("_L2NORM")
    name = ctx.unique(ctx.pick("l2_norm", "vector_norm"))
    ctx.const(kern, 'cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")')
    return cupy_piece(render(CUPY["reduction"], name=name, kern=kern),
                      f'print("norm of the first column", float({name}(points[:, 0])))')


def cx_moving_average(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("moving_average", "running_mean"))
    return cupy_piece(render(CUPY["moving_average"], name=name, window=ctx.pick(5, 16, 64)),
                      f'print("smoothed", float({name}(points).mean()))')


def cx_histeq(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("equalize_histogram", "histogram_equalization"))
    return cupy_piece(render(CUPY["histeq"], name=name),
                      f'print("equalised mean", float({name}((cp.abs(points[:, :4]) * 40).astype(cp.uint8)).mean()))')


def cx_gemm_bench(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("gemm_tflops", "benchmark_matmul"))
    return cupy_piece(render(CUPY["gemm_bench"], name=name, n=ctx.pick(1024, 2048, 4096), reps=ctx.pick(10, 20)),
                      f"{name}()")


def cx_memory(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("memory_report", "pool_usage"))
    return cupy_piece(render(CUPY["memory"], name=name), f'{name}("after the trials: ")')


CUPY_FUNCS = [cx_pairwise, cx_kmeans, cx_power, cx_cg, cx_fft, cx_softmax, cx_elementwise, cx_raw, cx_reduction,
              cx_moving_average, cx_histeq, cx_gemm_bench, cx_memory]


# =============================================================================== Numba


def gen_numba(ctx: Ctx, target: int) -> tuple[str, str]:
    ctx.const("THREADS", ctx.pick(128, 256, 512))
    ctx.const("N", ctx.pick(1 << 20, 1 << 22, 4_000_000))
    ctx.const("ITERS", ctx.pick(50, 100, 500))
    ctx.const("SEED", ctx.rng.randrange(100000))
    # the stencil program every Numba file has: it carries the loops the waste patterns need
    ctx.const("GRID", ctx.pick(256, 512, 1024))
    kernel = ctx.unique(ctx.pick("jacobi_step", "heat_step", "relax", "diffuse"))
    driver_fn = ctx.unique(ctx.pick("run_stencil", "solve_heat", "simulate"))
    stencil = render(NUMBA["stencil"], kernel=kernel)
    before, inside, after = [], [], []
    if ctx.wants("to_device_loop"):  # GL103: the same host coefficients go up every step
        inside.append(f"d_coeffs = cuda.to_device(coeffs)\n{kernel}[blocks, threads](d_a, d_b, d_coeffs)")
    else:
        before.append("d_coeffs = cuda.to_device(coeffs)")
        inside.append(f"{kernel}[blocks, threads](d_a, d_b, d_coeffs)")
    if ctx.wants("alloc_in_loop"):  # GL101: a fresh device array every step
        inside.insert(0, "d_b = cuda.device_array((GRID, GRID), dtype=np.float32)")
    else:
        before.append("d_b = cuda.device_array_like(d_a)")
    inside.append("d_a, d_b = d_b, d_a")
    if ctx.wants("early"):  # GL001: the residual buffer is made before the time loop and used after it
        before.append("d_residual = cuda.device_array(1, dtype=np.float32)")
        after.append("d_residual.copy_to_device(np.zeros(1, dtype=np.float32))\n"
                     "residual_norm[blocks, threads](d_a, d_residual)\n"
                     'print("residual", d_residual.copy_to_host()[0])')
        res_kernel = render(NUMBA["residual_norm"])
        ctx.used.add("residual_norm")
    else:
        res_kernel = ""
    if ctx.wants("zeros_copy"):  # GL007: to_device(zeros) initialises, copy_to_device overwrites
        init = ("d_a = cuda.to_device(np.zeros((GRID, GRID), dtype=np.float32))\n"
                "d_a.copy_to_device(field)")
    else:
        init = "d_a = cuda.to_device(field)"
    driver_code = render(NUMBA["stencil_driver"], driver_fn=driver_fn, alpha=ctx.pick(0.1, 0.2, 0.24), init=init,
                         before="\n".join(before), inside="\n".join(inside), after="\n".join(after))
    pieces = [stencil] + ([res_kernel] if res_kernel else []) + [driver_code]

    def main_code(hooks: list[dict[str, str]]) -> str:
        calls = "\n".join(h["main"] for h in hooks if "main" in h)
        return render(NUMBA["main"], driver_fn=driver_fn, calls=calls,
                      rng_line="rng = np.random.default_rng(SEED)" if "rng" in free_names(calls) else "")

    extras = fill_extras(ctx, NUMBA_FUNCS, pieces, main_code, target)
    doc = ctx.pick("Numba CUDA kernels and their host wrappers, checked against NumPy.\n",
                   "GPU kernels written with numba.cuda: stencils, reductions and a few classics.\n",
                   "Ports of the CUDA samples to Numba; each wrapper copies in, launches and copies out.\n")
    return f"numba_{ctx.pick('kernels', 'stencil', 'samples', 'reductions')}", assemble(
        ctx, doc, pieces + [e.code for e in extras] + [main_code([e.hooks for e in extras])])


def nb_piece(code: str, main: str) -> Piece:
    return Piece(code, hooks={"main": main})


def nb_saxpy(ctx: Ctx) -> Piece:
    k = ctx.unique(ctx.pick("saxpy_kernel", "axpy_kernel"))
    w = ctx.unique(ctx.pick("saxpy", "axpy"))
    return nb_piece(render(NUMBA["saxpy"], k=k, w=w), render(NUMBA["saxpy_check"], w=w))


def nb_reduce(ctx: Ctx) -> Piece:
    k = ctx.unique(ctx.pick("block_sum", "partial_sums", "reduce_kernel"))
    w = ctx.unique(ctx.pick("gpu_sum", "device_sum"))
    return nb_piece(render(NUMBA["reduce"], k=k, w=w), render(NUMBA["reduce_check"], w=w))


def nb_matmul(ctx: Ctx) -> Piece:
    ctx.const("TPB", 16)
    k = ctx.unique(ctx.pick("fast_matmul", "matmul_shared", "tiled_gemm"))
    w = ctx.unique(ctx.pick("gpu_matmul", "matmul"))
    return nb_piece(render(NUMBA["matmul"], k=k, w=w), render(NUMBA["matmul_check"], w=w, n=ctx.pick(256, 512)))


def nb_hist(ctx: Ctx) -> Piece:
    ctx.const("BINS", ctx.pick(64, 128, 256))
    k = ctx.unique(ctx.pick("histogram_kernel", "hist_atomic"))
    w = ctx.unique(ctx.pick("gpu_histogram", "histogram"))
    return nb_piece(render(NUMBA["hist"], k=k, w=w, blocks=ctx.pick(64, 128, 256)), render(NUMBA["hist_check"], w=w))


def nb_mandelbrot(ctx: Ctx) -> Piece:
    dev = ctx.unique(ctx.pick("escape_time", "mandel_iter"))
    k = ctx.unique(ctx.pick("mandelbrot_kernel", "fractal_kernel"))
    w = ctx.unique(ctx.pick("mandelbrot", "render_fractal"))
    return nb_piece(render(NUMBA["mandelbrot"], dev=dev, k=k, w=w, width=ctx.pick(1024, 1536, 2048),
                           height=ctx.pick(768, 1024), iters=ctx.pick(20, 50, 100)),
                    f'print("mandelbrot mean escape time", float({w}().mean()))')


def nb_montecarlo(ctx: Ctx) -> Piece:
    k = ctx.unique(ctx.pick("pi_kernel", "monte_carlo_pi"))
    w = ctx.unique(ctx.pick("estimate_pi", "gpu_pi"))
    return nb_piece(render(NUMBA["montecarlo"], k=k, w=w, total=ctx.pick(65536, 262144), samples=ctx.pick(100, 1000)),
                    f'print("pi ~", {w}(), "error", abs({w}() - math.pi))')


def nb_nbody(ctx: Ctx) -> Piece:
    k = ctx.unique(ctx.pick("accelerations", "nbody_forces", "gravity"))
    w = ctx.unique(ctx.pick("nbody_step", "advance_bodies"))
    return nb_piece(render(NUMBA["nbody"], k=k, w=w, dt=ctx.pick(0.001, 0.01), steps=ctx.pick(10, 50, 100)),
                    render(NUMBA["nbody_check"], w=w, n=ctx.pick(1024, 4096)))


def nb_blur(ctx: Ctx) -> Piece:
    k = ctx.unique(ctx.pick("box_blur", "blur_kernel", "smooth_image"))
    w = ctx.unique(ctx.pick("blur", "gpu_blur"))
    return nb_piece(render(NUMBA["blur"], k=k, w=w, radius=ctx.pick(1, 2, 3)), render(NUMBA["blur_check"], w=w))


def nb_scan(ctx: Ctx) -> Piece:
    k = ctx.unique(ctx.pick("block_scan", "inclusive_scan_block"))
    w = ctx.unique(ctx.pick("prefix_sums", "blockwise_cumsum"))
    return nb_piece(render(NUMBA["scan"], k=k, w=w), render(NUMBA["scan_check"], w=w))


def nb_events(ctx: Ctx) -> Piece:
    w = ctx.unique(ctx.pick("copy_bandwidth", "transfer_rate"))
    return nb_piece(render(NUMBA["events"], w=w, nbytes=ctx.pick("1 << 26", "1 << 28"), reps=ctx.pick(10, 20)),
                    f'print(f"pinned H2D: {{{w}():.1f}} GB/s")')


NUMBA_FUNCS = [nb_saxpy, nb_reduce, nb_matmul, nb_hist, nb_mandelbrot, nb_montecarlo, nb_nbody, nb_blur, nb_scan,
               nb_events]


# =============================================================================== cuda-python


def gen_cudart(ctx: Ctx, target: int) -> tuple[str, str]:
    ctx.cudart_style = ctx.pick("bindings", "bindings", "legacy")
    ctx.const("NBYTES", ctx.pick("1 << 24", "1 << 26", "64 * 1024 * 1024"))
    ctx.const("REPS", ctx.pick(10, 20, 50))
    check = render(CUDA_PYTHON["check"])
    H2D = "cudart.cudaMemcpyKind.cudaMemcpyHostToDevice"
    D2H = "cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost"
    roundtrip_leak = ctx.wants("leak")
    roundtrip = render(CUDA_PYTHON["roundtrip"], H2D=H2D, D2H=D2H,
                       free_src="" if roundtrip_leak else "check(cudart.cudaFree(d_src)[0])")
    if ctx.wants("alloc_in_loop"):  # GL101: a scratch buffer allocated and freed in every iteration
        sweep_body = render(CUDA_PYTHON["sweep_alloc_in_loop"])
    else:
        sweep_body = render(CUDA_PYTHON["sweep_one_buffer"])
    sweep = render(CUDA_PYTHON["memset_sweep"], body=sweep_body)
    pieces = [check, roundtrip, sweep]

    def main_code(hooks: list[dict[str, str]]) -> str:
        calls = "\n".join(h["main"] for h in hooks if "main" in h)
        return render(CUDA_PYTHON["main"], calls=calls)

    pool = list(CUDART_FUNCS) + ([cr_nvrtc] if ctx.cudart_style == "bindings" else [])
    extras = fill_extras(ctx, pool, pieces, main_code, target)
    doc = ctx.pick("Low-level CUDA runtime checks with cuda-python: allocation, copies, streams and events.\n",
                   "cuda-python utilities: device query, bandwidth tests and a stream pipeline.\n",
                   "Thin wrappers over cudaMalloc/cudaMemcpy used by the data loader, with self-tests.\n")
    text = assemble(ctx, doc, pieces + [e.code for e in extras] + [main_code([e.hooks for e in extras])],
                    tail='if __name__ == "__main__":\n    sys.exit(main())')
    return f"cudart_{ctx.pick('runtime', 'memcpy', 'bandwidth', 'streams')}", text


def cr_query(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("describe_devices", "query_devices"))
    return Piece(render(CUDA_PYTHON["query"], name=name), hooks={"main": f"{name}()"})


def cr_meminfo(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("memory_info", "free_memory"))
    return Piece(render(CUDA_PYTHON["meminfo"], name=name), hooks={"main": f'{name}("device memory: ")'})


def cr_bandwidth(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("bandwidth_test", "h2d_bandwidth", "measure_bandwidth"))
    return Piece(render(CUDA_PYTHON["bandwidth"], name=name), hooks={"main": f'print(f"H2D {{{name}():.1f}} GB/s")'})


def cr_streams(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("stream_pipeline", "chunked_upload", "overlapped_copies"))
    return Piece(render(CUDA_PYTHON["streams"], name=name, chunks=ctx.pick(8, 16, 32), streams=ctx.pick(2, 4)),
                 hooks={"main": f"{name}(np.ones(NBYTES // 4, dtype=np.float32))"})


def cr_buffer(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("DeviceBuffer", "CudaBuffer", "GpuAllocation"))
    return Piece(render(CUDA_PYTHON["buffer"], name=name), hooks={"main": render(CUDA_PYTHON["buffer_use"], name=name)})


def cr_memset_verify(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("memset_and_verify", "check_memset"))
    return Piece(render(CUDA_PYTHON["memset_verify"], name=name, value=ctx.pick(0, 7, 255)),
                 hooks={"main": f'print("memset ok:", {name}(1 << 20))'})


def cr_nvrtc(ctx: Ctx) -> Piece:
    ctx.const("SCALE_SOURCE", CUDA_PYTHON["scale_source"])
    name = ctx.unique(ctx.pick("compile_and_scale", "jit_scale"))
    return Piece(render(CUDA_PYTHON["nvrtc"], name=name, factor=ctx.pick(2.0, 0.5, 3.0)),
                 hooks={"main": f'print("scaled", {name}(np.ones(4096, dtype=np.float32))[:4])'})


def cr_peer(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("peer_access_matrix", "p2p_report"))
    return Piece(render(CUDA_PYTHON["peer"], name=name),
                 hooks={"main": f'print("peer access\\n", {name}().astype(int))'})


CUDART_FUNCS = [cr_query, cr_meminfo, cr_bandwidth, cr_streams, cr_buffer, cr_memset_verify, cr_peer]


# =============================================================================== corpus

KINDS: list[tuple[str, float, Callable[[Ctx, int], tuple[str, str]], list[str]]] = [
    # kind, weight, generator, waste patterns it can carry
    ("train", 0.22, gen_train, ["early", "probe", "const_to", "host_randn", "empty_cache", "zeros_copy"]),
    ("eval", 0.10, gen_eval, ["early", "const_to", "host_randn", "empty_cache"]),
    ("modules", 0.16, gen_modules, ["host_randn", "empty_cache"]),
    ("data", 0.14, gen_data, ["early", "const_to", "host_randn", "empty_cache"]),
    ("cupy", 0.14, gen_cupy, ["asarray_loop", "free_all_blocks", "copyto", "early"]),
    ("numba", 0.14, gen_numba, ["to_device_loop", "alloc_in_loop", "early", "zeros_copy"]),
    ("cudart", 0.10, gen_cudart, ["alloc_in_loop", "leak"]),
]


def generate_file(rng: Random, index: int, target: int) -> tuple[str, str, str, list[str]]:
    kind, _, gen, patterns = rng.choices(KINDS, weights=[k[1] for k in KINDS])[0]
    # about 45% of files carry deliberate waste, one to three patterns
    waste = sorted(rng.sample(patterns, min(len(patterns), rng.choice((1, 1, 2, 3))))) if rng.random() < 0.45 else []
    ctx = Ctx(rng, index, rng.choice(("device", "device", "dev")), waste)
    slug, text = gen(ctx, target)
    text = re.sub(r"\n{4,}", "\n\n\n", text)
    return kind, f"{index:04d}_{re.sub(r'[^a-z0-9]+', '_', slug.lower()).strip('_')}.py", text, waste


def generate_corpus(folder: Path, files: int, lines_per_file: int, seed: int) -> tuple[int, int, dict[str, int], int]:
    """Writes `files` programs of 0.7-1.3 times `lines_per_file` lines each, at least
    files * lines_per_file in all (the last file makes up a shortfall); returns (files, lines, files per kind,
    files with deliberate waste)."""
    rng = Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    goal = files * lines_per_file
    total = 0
    kinds: Counter[str] = Counter()
    wasteful = 0
    for i in range(files):
        target = int(lines_per_file * rng.uniform(0.7, 1.3))
        if i < files - 1 or target >= goal - total + 40:
            kind, name, text, waste = generate_file(rng, i, target)
        else:  # the last file makes up the total: retry from the same state with a larger target
            state = rng.getstate()
            target = goal - total
            for _ in range(10):
                rng.setstate(state)
                kind, name, text, waste = generate_file(rng, i, target)
                missing = goal - total - text.count("\n")
                if missing <= 0:
                    break
                target += missing + 10
        (folder / name).write_text(text, encoding="utf-8")
        total += text.count("\n")
        kinds[kind] += 1
        wasteful += bool(waste)
    while total < goal:  # the last file came out short of its target: add more
        kind, name, text, waste = generate_file(rng, files, min(goal - total + 20, int(lines_per_file * 1.3)))
        (folder / name).write_text(text, encoding="utf-8")
        total += text.count("\n")
        kinds[kind] += 1
        wasteful += bool(waste)
        files += 1
    return files, total, dict(kinds), wasteful


def check_corpus(folder: Path) -> tuple[int, list[str]]:
    """Compiles every generated file; returns (files compiled, errors)."""
    errors = []
    files = sorted(folder.glob("*.py"))
    for path in files:
        try:
            compile(path.read_text(encoding="utf-8"), str(path), "exec")
        except SyntaxError as exc:
            errors.append(f"{path.name}:{exc.lineno}: {exc.msg}")
    return len(files), errors


# =============================================================================== corpora


TARGET_PYTHON_LINES_PER_S = 60_000  # issue 19, point 3: static Python, per core, in CPU time
EXAMPLES_PLACES = ("pytorch-examples", "../pytorch-examples", "examples-pytorch", "/work/realcode/pytorch-examples")
EXAMPLES_ENV = "GPULINT_PYTORCH_EXAMPLES"  # where pytorch/examples is checked out, when not in EXAMPLES_PLACES


@dataclass
class Corpus:
    """The .py files of one code base, in a fixed order, and their lines (newlines counted)."""

    name: str
    root: Path
    files: list[Path]
    lines: int = 0
    note: str = ""


def python_files(root: Path) -> list[Path]:
    """Every .py file under `root`, sorted; hidden folders and __pycache__ left out."""
    out = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if any(part.startswith(".") or part == "__pycache__" for part in parts[:-1]) or not path.is_file():
            continue
        out.append(path)
    return out


def corpus_of(name: str, root: Path, note: str = "") -> Corpus:
    files = python_files(root)
    lines = sum(path.read_bytes().count(b"\n") for path in files)
    return Corpus(name, root, files, lines, note)


def find_examples(given: Path | None) -> tuple[Path | None, str]:
    """pytorch/examples: the path given, else $GPULINT_PYTORCH_EXAMPLES, else a usual place."""
    if given is not None:
        return (given, "") if given.is_dir() else (None, f"{given} is not a folder")
    candidates = ([os.environ[EXAMPLES_ENV]] if os.environ.get(EXAMPLES_ENV) else []) + list(EXAMPLES_PLACES)
    for place in candidates:
        path = Path(place).expanduser()
        if path.is_dir():
            return path.resolve(), ""
    return None, (f"not found (give --examples DIR, or set {EXAMPLES_ENV}; "
                  "git clone https://github.com/pytorch/examples)")


def find_torch(given: Path | None) -> tuple[Path | None, str]:
    """torch's own Python sources: the path given, else the installed package's folder (found
    without importing torch)."""
    if given is not None:
        return (given, "") if given.is_dir() else (None, f"{given} is not a folder")
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None, "torch is not installed for this Python (pip install torch)"
    return Path(list(spec.submodule_search_locations)[0]), ""


def torch_version(root: Path) -> str:
    version = root / "version.py"
    if version.is_file():
        match = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", version.read_text(encoding="utf-8", errors="replace"))
        if match:
            return match.group(1)
    return "?"


# =============================================================================== timing


@dataclass
class Timing:
    """One tool over one corpus: best CPU seconds (user+sys, the tool's process and its children)
    and best wall seconds of `repeat` runs, or why it did not run."""

    tool: str
    cpu: float | None = None
    wall: float | None = None
    findings: int | None = None
    error: str = ""
    note: str = ""


def run_cpu(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess]:
    """Run a command to its end: (CPU seconds of it and its children, wall seconds, the process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall, proc


def best_of(timing: Timing, runs: int, cmd: list[str], env: dict[str, str], cwd: Path,
            ok: tuple[int, ...]) -> subprocess.CompletedProcess | None:
    proc = None
    for _ in range(runs):
        cpu, wall, proc = run_cpu(cmd, env, cwd)
        if proc.returncode not in ok:
            timing.error = exit_error(proc)
            return None
        timing.cpu = cpu if timing.cpu is None else min(timing.cpu, cpu)
        timing.wall = wall if timing.wall is None else min(timing.wall, wall)
    return proc


def time_gpulint_check(corpus: Corpus, repeat: int) -> Timing:
    """`gpulint check` on the corpus's files, every rule, one job, no cache: the CLI, start-up included."""
    timing = Timing("gpulint check (CLI)")
    with tempfile.TemporaryDirectory(prefix="gpulint-pyspeed-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "gpulint", "check", "--select", "ALL", "--min-bytes", "0", "--no-cache",
               "--jobs", "1", "--format", "json", "--exit-zero", "-o", str(report), *map(str, corpus.files)]
        proc = best_of(timing, repeat, cmd, gpulint_env(), REPO, (0,))
        if proc is not None:
            try:
                timing.findings = len(json.loads(report.read_text(encoding="utf-8")))
            except (OSError, ValueError) as exc:
                timing.error = f"no JSON report ({exc})"
            internal = [line for line in proc.stderr.splitlines() if "internal error" in line]
            if internal:
                timing.note = f"{len(internal)} internal errors, e.g. {internal[0][:160]}"
    return timing


def time_gpulint_in_process(corpus: Corpus, repeat: int) -> Timing:
    """gpulint's engine called in this process: the analysis without interpreter start-up."""
    timing = Timing("gpulint in-process")
    try:
        sys.path.insert(0, str(REPO))
        from gpulint.config import Settings
        from gpulint.engine import check_paths
    except Exception as exc:
        timing.error = f"cannot import gpulint.engine ({type(exc).__name__}: {exc})"
        return timing
    settings = Settings(jobs=1, select=("ALL",), min_bytes=0)
    paths = [str(p) for p in corpus.files]
    for _ in range(repeat):
        gc.collect()
        c0, t0 = time.process_time(), time.perf_counter()
        report = check_paths(paths, settings)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        timing.cpu = cpu if timing.cpu is None else min(timing.cpu, cpu)
        timing.wall = wall if timing.wall is None else min(timing.wall, wall)
        timing.findings = len(report.findings)
        del report
    return timing


@dataclass
class Phases:
    """Where `check_paths`' CPU time goes on a corpus, in this process (best of `repeat` each):
    tree-sitter's parse, the Python frontend after it (lowering to histories), the rules, and the
    rest (discovery, reading, suppressions, results)."""

    parse: float
    lowering: float
    rules: float
    rest: float
    error: str = ""


def time_phases(corpus: Corpus, repeat: int, check_paths_cpu: float | None) -> Phases | None:
    """The phases of gpulint's in-process run; the rest is `check_paths_cpu` less the others."""
    try:
        sys.path.insert(0, str(REPO))
        from gpulint.config import Settings
        from gpulint.engine import analyse_unit
        from gpulint.rules import RULES
        from gpulint.static import python as frontend
    except Exception as exc:
        return Phases(0, 0, 0, 0, f"cannot import gpulint ({type(exc).__name__}: {exc})")
    settings = Settings(jobs=1, select=("ALL",), min_bytes=0)
    codes = sorted(RULES)
    sources = [(str(path), path.read_bytes()) for path in corpus.files]
    parser = frontend._parser()
    units: list = []

    def best(run: Callable[[], object]) -> float:
        seconds = None
        for _ in range(repeat):
            gc.collect()
            c0 = time.process_time()
            run()
            elapsed = time.process_time() - c0
            seconds = elapsed if seconds is None else min(seconds, elapsed)
        return seconds or 0.0

    def lower() -> None:
        units.clear()
        units.extend(frontend.analyse(name, source)[0] for name, source in sources)

    parse = best(lambda: [parser.parse(source) for _, source in sources])
    lowering = best(lower) - parse  # `analyse` parses, then lowers
    rules = best(lambda: [analyse_unit(unit, codes, settings) for unit in units])
    rest = (check_paths_cpu - parse - lowering - rules) if check_paths_cpu else 0.0
    return Phases(parse, lowering, rules, max(rest, 0.0))


def time_startup(repeat: int) -> tuple[float | None, float | None]:
    """CPU seconds of `gpulint check` on a one-line Python file (interpreter, imports, the frontend's
    first use) and of `python -c pass`: what the CLI pays whatever the corpus."""
    with tempfile.TemporaryDirectory(prefix="gpulint-pystartup-") as tmp:
        tiny = Path(tmp) / "tiny.py"
        tiny.write_text("x = 1\n", encoding="utf-8")
        check = Timing("start-up")
        best_of(check, repeat, [sys.executable, "-m", "gpulint", "check", "--select", "ALL", "--no-cache", "--jobs",
                                "1", "--format", "json", "--exit-zero", str(tiny)], gpulint_env(), REPO, (0,))
        bare = Timing("python")
        best_of(bare, repeat, [sys.executable, "-c", "pass"], gpulint_env(), REPO, (0,))
    return check.cpu, bare.cpu


def count_instructions(corpus: Corpus) -> tuple[int | None, str]:
    """Instructions the CLI's whole process executes on the corpus (`gpulint check` as timed above),
    counted by valgrind's callgrind: the same figure run after run (the hash seed fixed), so two
    versions compare on a shared, busy machine where CPU seconds move by a few percent between
    runs.  (None, why) without valgrind.  About 50x slower than the run itself."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None, "valgrind not installed"
    env = gpulint_env()
    env["PYTHONHASHSEED"] = "0"
    # The interpreter itself, not a version manager's shim (a shell script valgrind would count).
    python = os.path.realpath(sys.executable)
    with tempfile.TemporaryDirectory(prefix="gpulint-pyinstr-") as tmp:
        cmd = [valgrind, "--tool=callgrind", f"--callgrind-out-file={Path(tmp) / 'callgrind.out'}", python, "-m",
               "gpulint", "check", "--select", "ALL", "--min-bytes", "0", "--no-cache", "--jobs", "1", "--format",
               "json", "--exit-zero", "-o", str(Path(tmp) / "report.json"), *map(str, corpus.files)]
        subprocess.run(cmd[5:], cwd=REPO, env=env, capture_output=True)  # bytecode written before counting
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    found = re.search(r"Collected\s*:\s*(\d+)", proc.stderr)
    return (int(found.group(1)), "") if found else (None, f"no count from valgrind (exit {proc.returncode})")


def cli_budgets(results: list[tuple[Corpus, list[Timing]]], startup: float) -> list[str]:
    """Per corpus, what the CLI's target leaves for the analysis once start-up is paid, and what the
    analysis takes in the CLI's fresh process (its CPU time less the start-up): where a CLI figure
    under the target has to gain, whatever the in-process figure says."""
    lines = []
    for corpus, timings in results:
        cli = next((t for t in timings if t.tool == "gpulint check (CLI)" and t.cpu is not None), None)
        if cli is None or cli.cpu is None:
            continue
        budget = corpus.lines / TARGET_PYTHON_LINES_PER_S
        lines.append(f"{corpus.name}: {TARGET_PYTHON_LINES_PER_S:,} lines/s through the CLI is {budget:.3f} s in all; "
                     f"after the start-up, {budget - startup:.3f} s for the analysis, which takes "
                     f"{cli.cpu - startup:.3f} s in the CLI's process")
    return lines


def print_phases(corpus: Corpus, phases: Phases | None) -> None:
    if phases is None:
        return
    if phases.error:
        print(f"  in-process phases: skipped: {phases.error}")
        return
    parts = [("tree-sitter parse", phases.parse), ("lowering (python.py)", phases.lowering),
             ("rules", phases.rules), ("the rest", phases.rest)]
    total = sum(seconds for _, seconds in parts) or 1.0
    print("  in-process phases: " + ", ".join(f"{name} {seconds:.3f} s ({seconds / total:.0%})"
                                               for name, seconds in parts))


def time_parse_only(corpus: Corpus, repeat: int) -> Timing:
    """tree-sitter-python's parse of every file, and nothing else: the floor of a tree-sitter frontend."""
    timing = Timing("tree-sitter parse only")
    try:
        import tree_sitter_python
        from tree_sitter import Language, Parser
    except ImportError as exc:
        timing.error = f"tree-sitter-python unavailable ({exc})"
        return timing
    parser = Parser(Language(tree_sitter_python.language()))
    sources = [path.read_bytes() for path in corpus.files]
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        for source in sources:
            parser.parse(source)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        timing.cpu = cpu if timing.cpu is None else min(timing.cpu, cpu)
        timing.wall = wall if timing.wall is None else min(timing.wall, wall)
    return timing


def time_flake8(corpus: Corpus, repeat: int) -> Timing:
    timing = Timing("flake8 (CLI)")
    probe = subprocess.run([sys.executable, "-m", "flake8", "--version"], capture_output=True, text=True)
    if probe.returncode != 0:
        timing.error = "not installed for this Python (pip install flake8)"
        return timing
    timing.note = "flake8 " + probe.stdout.split()[0] if probe.stdout.split() else ""
    env = dict(os.environ)
    env.pop("PYTHONSTARTUP", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmd = [sys.executable, "-m", "flake8", "--jobs", "1", "--isolated", "--exit-zero", *map(str, corpus.files)]
    # Not from the corpus's folder: `python -m` puts the working folder first on sys.path, where
    # torch's `signal/` would hide the standard library's.
    proc = best_of(timing, repeat, cmd, env, REPO, (0,))
    if proc is not None:
        timing.findings = sum(1 for line in proc.stdout.splitlines() if line.strip())
    return timing


def ruff_command() -> list[str] | None:
    exe = shutil.which("ruff")
    if exe is not None:
        return [exe]
    probe = subprocess.run([sys.executable, "-m", "ruff", "--version"], capture_output=True, text=True)
    return [sys.executable, "-m", "ruff"] if probe.returncode == 0 else None


def time_ruff(corpus: Corpus, repeat: int, every_rule: bool) -> Timing:
    """Ruff on one thread (RAYON_NUM_THREADS=1), no cache: its default rules, or every rule."""
    timing = Timing("ruff --select ALL (CLI)" if every_rule else "ruff (CLI)")
    ruff = ruff_command()
    if ruff is None:
        timing.error = "not installed (pip install ruff)"
        return timing
    version = subprocess.run([*ruff, "--version"], capture_output=True, text=True).stdout.strip()
    timing.note = version
    env = dict(os.environ)
    env["RAYON_NUM_THREADS"] = "1"
    cmd = [*ruff, "check", "--no-cache", "--isolated", "--exit-zero", "--output-format", "concise",
           *(["--select", "ALL"] if every_rule else []), *map(str, corpus.files)]
    proc = best_of(timing, repeat, cmd, env, corpus.root, (0,))
    if proc is not None:
        timing.findings = sum(1 for line in proc.stdout.splitlines() if re.match(r".+:\d+:\d+: ", line))
    return timing


# =============================================================================== report


def rate(lines: int, seconds: float | None) -> str:
    return f"{lines / seconds:,.0f}" if seconds else "-"


def over_floor(timing: Timing, floor: Timing) -> str:
    if not timing.cpu or not floor.cpu:
        return "-"
    return f"{timing.cpu / floor.cpu:.1f}x"


def print_corpus_table(corpus: Corpus, timings: list[Timing]) -> None:
    floor = next((t for t in timings if t.tool == "tree-sitter parse only"), Timing(""))
    print(f"\n{corpus.name}: {len(corpus.files):,} files, {corpus.lines:,} lines ({corpus.root})"
          + (f"; {corpus.note}" if corpus.note else ""))
    print(f"  {'tool':<26} {'CPU s':>8} {'wall s':>8} {'lines/s CPU':>12} {'lines/s wall':>13} "
          f"{'x parse':>8} {'findings':>9}")
    for t in timings:
        if t.error:
            print(f"  {t.tool:<26} skipped: {t.error}")
            continue
        findings = "" if t.findings is None else f"{t.findings:,}"
        print(f"  {t.tool:<26} {t.cpu:8.2f} {t.wall:8.2f} {rate(corpus.lines, t.cpu):>12} "
              f"{rate(corpus.lines, t.wall):>13} {over_floor(t, floor):>8} {findings:>9}"
              + (f"  ({t.note})" if t.note else ""))


def verdicts(results: list[tuple[Corpus, list[Timing]]]) -> list[str]:
    """gpulint's CPU lines/s against the target, per corpus and over the real corpora together,
    with how far each is from the parse-only floor."""
    out = []
    groups = [(c.name, [(c, ts)]) for c, ts in results]
    real = [(c, ts) for c, ts in results if c.name != "generated"]
    if len(real) > 1:
        groups.append((" + ".join(c.name for c, _ in real), real))
    for tool in ("gpulint check (CLI)", "gpulint in-process"):
        for label, members in groups:
            lines, cpu, floor = 0, 0.0, 0.0
            for corpus, timings in members:
                mine = next((t for t in timings if t.tool == tool and t.cpu), None)
                parse = next((t for t in timings if t.tool == "tree-sitter parse only" and t.cpu), None)
                if mine is None:
                    break
                lines += corpus.lines
                cpu += mine.cpu or 0.0
                floor += parse.cpu if parse is not None and parse.cpu else 0.0
            else:
                speed = lines / cpu
                met = "met" if speed >= TARGET_PYTHON_LINES_PER_S else "NOT met"
                gap = f"; parse-only floor {lines / floor:,.0f} lines/s, {cpu / floor:.1f}x the parse's CPU time" \
                    if floor else ""
                out.append(f"{tool} on {label}: {speed:,.0f} lines/s CPU -> {met}{gap}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=Path, help=f"pytorch/examples checkout [${EXAMPLES_ENV}, or found in "
                        f"{', '.join(EXAMPLES_PLACES)}]")
    parser.add_argument("--torch", type=Path, help="folder of torch's Python sources [the installed torch package]")
    parser.add_argument("--corpus", action="append", choices=("generated", "examples", "torch"),
                        help="time only these corpora (repeatable) [all that are found]")
    parser.add_argument("--files", type=int, default=200, help="generated corpus: number of .py files [200]")
    parser.add_argument("--lines-per-file", type=int, default=220, help="generated corpus: average lines per file [220]")
    parser.add_argument("--seed", type=int, default=20240601, help="generated corpus: seed of the generator")
    parser.add_argument("--out", type=Path, help="generate into DIR (created; kept) instead of a temporary folder")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is reported [3]")
    parser.add_argument("--slow-repeat", type=int, default=1,
                        help="runs of flake8 (about 90 s on torch's sources each) [1]")
    parser.add_argument("--instructions", action="store_true",
                        help="also count the CLI's instructions per corpus with valgrind (deterministic; slow)")
    parser.add_argument("--generate-only", action="store_true", help="write the generated corpus and stop")
    parser.add_argument("--check-corpus", action="store_true",
                        help="compile every generated file and run flake8 on it, then stop")
    args = parser.parse_args(argv)
    if args.files < 1 or args.lines_per_file < 50 or args.repeat < 1 or args.slow_repeat < 1:
        parser.error("--files, --repeat and --slow-repeat must be >= 1, --lines-per-file >= 50")
    wanted = set(args.corpus or ("generated", "examples", "torch"))

    corpora: list[Corpus] = []
    generated_folder: Path | None = None
    keep = False
    try:
        if "generated" in wanted or args.generate_only or args.check_corpus:
            if args.out:
                generated_folder = prepare_out_folder(parser, args.out, MARKER, "*.py", "python_speed.py",
                                                      OTHER_MARKERS)
                keep = True
            else:
                generated_folder = Path(tempfile.mkdtemp(prefix="gpulint-pycorpus-"))
                mark_folder(generated_folder, MARKER, "python_speed.py")
            nfiles, nlines, kinds, wasteful = generate_corpus(generated_folder, args.files, args.lines_per_file,
                                                              args.seed)
            mix = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
            print(f"generated {nfiles} files, {nlines:,} lines in {generated_folder} (seed {args.seed}): {mix}; "
                  f"{wasteful} files with deliberate waste")
            if args.generate_only:
                keep = True
                return 0
            if args.check_corpus:
                compiled, errors = check_corpus(generated_folder)
                print(f"compile(): {compiled - len(errors)} of {compiled} files compile")
                for e in errors[:10]:
                    print(f"  {e}")
                flake = time_flake8(corpus_of("generated", generated_folder), 1)
                print(f"flake8: {flake.error or f'{flake.findings} problems'}")
                return 0
            corpora.append(corpus_of("generated", generated_folder, "GPU programs made by this script"))
        if "examples" in wanted:
            root, why = find_examples(args.examples)
            if root is None:
                print(f"pytorch/examples: skipped: {why}")
            else:
                corpora.append(corpus_of("pytorch-examples", root))
        if "torch" in wanted:
            root, why = find_torch(args.torch)
            if root is None:
                print(f"torch's sources: skipped: {why}")
            else:
                corpora.append(corpus_of("torch", root, f"torch {torch_version(root)}"))
        corpora = [c for c in corpora if c.files]
        if not corpora:
            print("nothing to time: no corpus found")
            return 0

        print(f"\nCPU seconds are user+sys of the tool and its children (in-process rows: this process), best of "
              f"{args.repeat} ({args.slow_repeat} for flake8); lines/s = newlines / seconds; 'x parse' = CPU time "
              f"over tree-sitter-python's parse alone, the floor of a tree-sitter frontend. One core each: "
              f"`--jobs 1`, Ruff with RAYON_NUM_THREADS=1.")
        results: list[tuple[Corpus, list[Timing]]] = []
        for corpus in corpora:
            in_process = time_gpulint_in_process(corpus, args.repeat)
            timings = [time_parse_only(corpus, args.repeat),
                       time_gpulint_check(corpus, args.repeat),
                       in_process,
                       time_ruff(corpus, args.repeat, every_rule=False),
                       time_ruff(corpus, args.repeat, every_rule=True),
                       time_flake8(corpus, args.slow_repeat)]
            results.append((corpus, timings))
            print_corpus_table(corpus, timings)
            print_phases(corpus, time_phases(corpus, args.repeat, in_process.cpu) if not in_process.error else None)
            if args.instructions:
                count, why = count_instructions(corpus)
                print(f"  gpulint check (CLI), instructions (callgrind): {f'{count:,}' if count is not None else why}")
        startup, bare = time_startup(args.repeat)
        if startup is not None:
            print(f"\nstart-up: `gpulint check` of a one-line file {startup:.3f} s CPU (`python -c pass` "
                  f"{bare:.3f} s): every CLI row above includes it")
            for line in cli_budgets(results, startup):
                print(f"  {line}")
        print_machine(machine_description(), today())
        print(f"target: >= {TARGET_PYTHON_LINES_PER_S:,} lines/s per core in CPU time (issue 19, point 3)")
        for line in verdicts(results):
            print(f"  {line}")
        return 0
    finally:
        if generated_folder is not None:
            if keep:
                print(f"\nkept the generated files in {generated_folder}")
            else:
                shutil.rmtree(generated_folder, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(0)
