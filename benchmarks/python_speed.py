#!/usr/bin/env python3
"""How fast is `gpulint check` on Python GPU code, on one core, next to flake8?

Generates a corpus of realistic Python GPU programs -- PyTorch training and evaluation scripts,
libraries of `nn.Module`s with buffers, data pipelines with CUDA prefetchers, CuPy array code
(with `ElementwiseKernel`/`RawKernel`), Numba `@cuda.jit` kernels with `cuda.to_device` /
`cuda.device_array` host wrappers, and cuda-python `cudaMalloc`/`cudaMemcpy` code -- some of
them with deliberate memory waste (a tensor made before a long loop and used after it, `zeros`
then `copy_`, `.to(device)` of constant data inside a loop, `torch.randn(...).cuda()`,
`torch.cuda.empty_cache()` in a loop, allocations in loops, leaked `cudaMalloc` pointers), then
times, each the best of `--repeat` runs:

* `python -m gpulint check DIR --jobs 1 --format json -o FILE`
* `gpulint.engine.check_paths([DIR], Settings(jobs=1))` in this process (no interpreter start-up)
* `python -m flake8 --jobs 1 --isolated --max-line-length 120 DIR` (the corpus is flake8-clean
  with these settings, so flake8 does all its work and reports nothing)

and prints lines/s for each, gpulint's number of findings (by code) and the ratio of gpulint's
time to flake8's. The target is 20,000 lines/s on one core for `gpulint check`; missing it is
reported, never an error: this is a benchmark, not a test, and it always exits 0. When gpulint
analysed none of the files (no Python frontend), its figure measures start-up and file discovery
only, and the script says so instead of judging the target.

`--jobs 1` keeps both tools on one core; `--pin CPU` also pins the runs to one CPU, which only
makes sense on an otherwise idle machine. flake8 is not installed by this script: without it
(`pip install flake8`) its row reads "unavailable".

    python benchmarks/python_speed.py                  # 200 files, ~45,000 lines
    python benchmarks/python_speed.py --markdown       # also a table for the README
    python benchmarks/python_speed.py --files 400 --lines-per-file 250 --out /tmp/pycorpus

Files are 150-300 lines at the default `--lines-per-file 220` (each is 0.7-1.3 times it, with a
floor of about 110 lines). The corpus is deterministic for a given `--seed`, `--files` and
`--lines-per-file`; `--check-corpus` compiles every file and runs flake8 on it.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import gc
import io
import keyword
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import tokenize
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from string import Template
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from static_speed import (  # noqa: E402  (static_speed has no side effects on import)
    REPO,
    TARGET_LINES_PER_S,
    best_json_run,
    fmt_rate,
    machine_description,
    pin_to_cpu,
)

MARKER = ".gpulint-python-benchmark-corpus"
OTHER_MARKERS = (".gpulint-benchmark-corpus",)  # static_speed.py's corpus: not ours to overwrite
FLAKE8_ARGS = ["--jobs", "1", "--isolated", "--max-line-length", "120"]


# =============================================================================== templates


def render(template: str, **values: object) -> str:
    """Dedent a `$name` template and substitute it; a line that is only `$name` takes a block,
    indented like the placeholder (an empty block removes the line)."""
    out: list[str] = []
    for line in textwrap.dedent(template).strip("\n").split("\n"):
        m = re.fullmatch(r"(\s*)\$(\w+)", line)
        if m and m.group(2) in values:
            block = str(values[m.group(2)])
            if block.strip():
                out.extend(m.group(1) + part if part.strip() else "" for part in block.split("\n"))
            continue
        out.append(Template(line).substitute({k: str(v) for k, v in values.items()}))
    return "\n".join(out)


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
    code = render('''
        class $name(nn.Module):
            """Feed-forward classifier with $depth hidden layers; inputs are standardised by buffers."""

            def __init__(self, in_features, num_classes, hidden=$hidden, depth=$depth, dropout=$dropout):
                super().__init__()
                layers = []
                width = in_features
                for _ in range(depth):
                    layers += [nn.Linear(width, hidden), nn.$norm(hidden), nn.$act(), nn.Dropout(dropout)]
                    width = hidden
                self.body = nn.Sequential(*layers)
                self.head = nn.Linear(width, num_classes)
                self.register_buffer("input_mean", torch.zeros(in_features))
                self.register_buffer("input_std", torch.ones(in_features))

            @torch.no_grad()
            def set_input_stats(self, mean, std):
                self.input_mean.copy_(mean)
                self.input_std.copy_(std.clamp_min(1e-6))

            def forward(self, x):
                x = (x - self.input_mean) / self.input_std
                return self.head(self.body(x))
    ''', name=name, depth=ctx.pick(2, 3, 4), hidden=ctx.pick(128, 256, 512), dropout=ctx.pick(0.0, 0.1, 0.2),
                  norm=ctx.pick("LayerNorm", "BatchNorm1d"), act=ctx.pick("ReLU", "GELU", "SiLU"))
    return name, code


def model_cnn(ctx: Ctx) -> tuple[str, str]:
    name = ctx.unique(ctx.pick("SmallConvNet", "ConvClassifier", "TinyResNet", "SimpleCNN"))
    act = ctx.pick("ReLU", "SiLU", "ReLU6")
    code = render('''
        class $name(nn.Module):
            """Three conv-BN-$act stages, global average pooling and a linear classifier."""

            def __init__(self, in_channels, num_classes, width=$width, dropout=$dropout):
                super().__init__()
                self.features = nn.Sequential(
                    self._block(in_channels, width),
                    self._block(width, width * 2),
                    nn.MaxPool2d(2),
                    self._block(width * 2, width * 4),
                    nn.AdaptiveAvgPool2d(1),
                )
                self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(dropout), nn.Linear(width * 4, num_classes))

            @staticmethod
            def _block(cin, cout):
                return nn.Sequential(
                    nn.Conv2d(cin, cout, kernel_size=3, padding=1, bias=False),
                    nn.BatchNorm2d(cout),
                    nn.$act(inplace=True),
                )

            def forward(self, x):
                return self.classifier(self.features(x))
    ''', name=name, act=act, width=ctx.pick(16, 32, 64), dropout=ctx.pick(0.1, 0.25, 0.5))
    return name, code


def module_posenc(ctx: Ctx) -> tuple[str, str]:
    name = ctx.unique(ctx.pick("PositionalEncoding", "SinusoidalPositions", "PosEncoding"))
    code = render('''
        class $name(nn.Module):
            """Sinusoidal positional encoding, kept as a non-persistent buffer."""

            def __init__(self, dim, max_len=$max_len):
                super().__init__()
                position = torch.arange(max_len).unsqueeze(1)
                div_term = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
                pe = torch.zeros(max_len, dim)
                pe[:, 0::2] = torch.sin(position * div_term)
                pe[:, 1::2] = torch.cos(position * div_term)
                self.register_buffer("pe", pe, persistent=False)

            def forward(self, x):
                return x + self.pe[:x.size(1)]
    ''', name=name, max_len=ctx.pick(512, 1024, 2048))
    return name, code


def model_lm(ctx: Ctx) -> tuple[str, list[str]]:
    if ctx.rng.random() < 0.3:
        name = ctx.unique(ctx.pick("GRULanguageModel", "RecurrentLM", "CharGRU"))
        code = render('''
            class $name(nn.Module):
                """Embedding, a $layers-layer GRU and a tied output projection."""

                def __init__(self, vocab_size, dim=$dim, layers=$layers, dropout=$dropout):
                    super().__init__()
                    self.embed = nn.Embedding(vocab_size, dim)
                    self.rnn = nn.GRU(dim, dim, num_layers=layers, batch_first=True, dropout=dropout)
                    self.norm = nn.LayerNorm(dim)
                    self.head = nn.Linear(dim, vocab_size, bias=False)
                    self.head.weight = self.embed.weight

                def forward(self, tokens):
                    out, _ = self.rnn(self.embed(tokens))
                    return self.head(self.norm(out))
        ''', name=name, dim=ctx.pick(128, 256, 384), layers=ctx.pick(2, 3), dropout=ctx.pick(0.1, 0.2))
        return name, [code]
    pe, pe_code = module_posenc(ctx)
    name = ctx.unique(ctx.pick("TinyTransformerLM", "CausalTransformer", "DecoderOnlyLM", "MiniGPT"))
    code = render('''
        class $name(nn.Module):
            """Decoder-only transformer; the causal mask is a buffer sized for the longest sequence."""

            def __init__(self, vocab_size, dim=$dim, heads=$heads, layers=$layers, dropout=$dropout, max_len=$max_len):
                super().__init__()
                self.embed = nn.Embedding(vocab_size, dim)
                self.pos = $pe(dim, max_len)
                layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=4 * dim, dropout=dropout,
                                                   batch_first=True, norm_first=True)
                self.encoder = nn.TransformerEncoder(layer, layers)
                self.norm = nn.LayerNorm(dim)
                self.lm_head = nn.Linear(dim, vocab_size, bias=False)
                self.lm_head.weight = self.embed.weight
                mask = torch.triu(torch.full((max_len, max_len), float("-inf")), diagonal=1)
                self.register_buffer("causal_mask", mask, persistent=False)

            def forward(self, tokens):
                length = tokens.size(1)
                h = self.pos(self.embed(tokens))
                h = self.encoder(h, mask=self.causal_mask[:length, :length])
                return self.lm_head(self.norm(h))
    ''', name=name, pe=pe, dim=ctx.pick(128, 256, 512), heads=ctx.pick(4, 8), layers=ctx.pick(2, 4, 6),
                  dropout=ctx.pick(0.0, 0.1), max_len=ctx.pick(256, 512))
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
    return render('''
        def set_seed(seed):
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            torch.cuda.manual_seed_all(seed)
            $extra
    ''', extra=extra)


def loaders_piece(ctx: Ctx, task: Task) -> str:
    if task.kind == "tabular":
        data = render('''
            features = torch.randn(args.samples, IN_FEATURES, generator=gen)
            projection = torch.randn(IN_FEATURES, NUM_CLASSES, generator=gen)
            noise = $noise * torch.randn(args.samples, NUM_CLASSES, generator=gen)
            labels = (features @ projection + noise).argmax(dim=1)
        ''', noise=ctx.pick(0.05, 0.1, 0.3))
        xs, ys = "features", "labels"
    elif task.kind == "image":
        data = render('''
            images = torch.rand(args.samples, CHANNELS, IMAGE_SIZE, IMAGE_SIZE, generator=gen)
            labels = (images.mean(dim=(1, 2, 3)) * NUM_CLASSES * $mult).long() % NUM_CLASSES
        ''', mult=ctx.pick(7, 13, 31))
        xs, ys = "images", "labels"
    else:
        data = render('''
            tokens = torch.randint(0, VOCAB_SIZE, (args.samples, SEQ_LEN + 1), generator=gen)
            inputs, shifted = tokens[:, :-1], tokens[:, 1:]
        ''')
        xs, ys = "inputs", "shifted"
    return render('''
        def make_loaders(args):
            """Synthetic $kind data, split into training and validation loaders."""
            gen = torch.Generator().manual_seed(args.seed)
            $data
            split = int(args.samples * (1.0 - args.val_fraction))
            train_set = TensorDataset($xs[:split], $ys[:split])
            val_set = TensorDataset($xs[split:], $ys[split:])
            train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                                      num_workers=args.workers, pin_memory=True, drop_last=True)
            val_loader = DataLoader(val_set, batch_size=args.batch_size * 2, shuffle=False,
                                    num_workers=args.workers, pin_memory=True)
            return train_loader, val_loader
    ''', kind=task.kind, data=data, xs=xs, ys=ys)


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
    return render('''
        def train_one_epoch(model, loader, optimizer, scaler, $dev, epoch, args):
            model.train()
            total_loss = 0.0
            correct = 0
            seen = 0
            start = time.perf_counter()
            $before
            for step, (inputs, targets) in enumerate(loader):
                $inputs_line
                targets = targets.to($dev, non_blocking=True)
                optimizer.zero_grad(set_to_none=True)
                with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=args.amp):
                    logits = model(inputs)
                    loss = $loss
                scaler.scale(loss).backward()
                $clip
                scaler.step(optimizer)
                scaler.update()
                total_loss += loss.item() * targets.size(0)
                correct += $correct
                seen += $count
                if step % args.log_every == 0:
                    rate = seen / max(time.perf_counter() - start, 1e-9)
                    print(f"epoch {epoch} step {step:5d} loss {loss.item():.4f} ({rate:.0f} samples/s)")
                $flush
            return total_loss / max(len(loader.dataset), 1), correct / max(seen, 1)
    ''', dev=d, before=before, inputs_line=inputs_line, loss=loss, clip=clip, correct=task.correct,
                  count=task.count, flush=flush)


def evaluate_piece(ctx: Ctx, task: Task) -> str:
    return render('''
        @torch.no_grad()
        def evaluate(model, loader, $dev):
            model.eval()
            total_loss = 0.0
            correct = 0
            seen = 0
            for inputs, targets in loader:
                inputs = inputs.to($dev, non_blocking=True)
                targets = targets.to($dev, non_blocking=True)
                logits = model(inputs)
                total_loss += $loss_sum.item()
                correct += $correct
                seen += $count
            return total_loss / max(seen, 1), correct / max(seen, 1)
    ''', dev=ctx.dev, loss_sum=task.loss_sum, correct=task.correct, count=task.count)


def checkpoint_piece(ctx: Ctx) -> str:
    return render('''
        def save_checkpoint(folder, model, optimizer, epoch):
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, f"checkpoint_{epoch:03d}.pt")
            torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
            return path
    ''')


# ------------------------------------------------------------------ torch extras (utilities)


def x_count_parameters(ctx: Ctx) -> Piece:
    name = ctx.unique("count_parameters")
    code = render('''
        def $name(model, trainable_only=True):
            """Number of (trainable) parameters, for the log."""
            return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)
    ''', name=name)
    return Piece(code, hooks={"model": f'print(f"{{{name}(model) / 1e6:.2f}}M trainable parameters")'})


def x_gpu_memory(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("log_gpu_memory", "report_memory", "memory_summary"))
    code = render('''
        def $name($dev, prefix=""):
            if not torch.cuda.is_available():
                return
            allocated = torch.cuda.memory_allocated($dev) / 2**20
            reserved = torch.cuda.memory_reserved($dev) / 2**20
            peak = torch.cuda.max_memory_allocated($dev) / 2**20
            print(f"{prefix}allocated {allocated:.1f} MiB, reserved {reserved:.1f} MiB, peak {peak:.1f} MiB")
    ''', name=name, dev=ctx.dev)
    return Piece(code, hooks={"epoch": f'{name}({ctx.dev}, prefix=f"epoch {{epoch}}: ")'})


def x_timer(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("CudaTimer", "Stopwatch", "SyncTimer"))
    code = render('''
        class $name:
            """Wall-clock timer that synchronises the GPU so that queued kernels are counted."""

            def __init__(self, label):
                self.label = label
                self.elapsed = 0.0
                self._start = 0.0

            def __enter__(self):
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
                self._start = time.perf_counter()
                return self

            def __exit__(self, *exc):
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
                self.elapsed = time.perf_counter() - self._start
                print(f"{self.label}: {self.elapsed * 1000:.1f} ms")
                return False
    ''', name=name)
    return Piece(code)


def x_average_meter(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("AverageMeter", "RunningAverage", "MetricTracker"))
    code = render('''
        class $name:
            """Keeps a running sum and count; `avg` is the mean so far."""

            def __init__(self, name, fmt=":.4f"):
                self.name = name
                self.fmt = fmt
                self.reset()

            def reset(self):
                self.value = 0.0
                self.sum = 0.0
                self.count = 0

            def update(self, value, n=1):
                self.value = value
                self.sum += value * n
                self.count += n

            @property
            def avg(self):
                return self.sum / max(self.count, 1)

            def __str__(self):
                return f"{self.name} {self.value:{self.fmt[1:]}} ({self.avg:{self.fmt[1:]}})"
    ''', name=name)
    return Piece(code)


def x_env_info(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("environment_info", "describe_environment", "runtime_info"))
    code = render('''
        def $name():
            info = {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}
            if torch.cuda.is_available():
                props = torch.cuda.get_device_properties(0)
                info["gpu"] = props.name
                info["memory_gib"] = round(props.total_memory / 2**30, 1)
                info["capability"] = f"{props.major}.{props.minor}"
            return info
    ''', name=name)
    return Piece(code, hooks={"start": f"print(json.dumps({name}(), indent=2))"})


def x_topk(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("topk_accuracy", "accuracy_at_k"))
    code = render('''
        @torch.no_grad()
        def $name(logits, targets, ks=(1, 5)):
            """Fraction of rows whose target is among the k highest logits, for each k."""
            maxk = min(max(ks), logits.size(-1))
            _, pred = logits.topk(maxk, dim=-1)
            hits = pred.eq(targets.unsqueeze(-1))
            return {k: hits[..., :min(k, maxk)].any(dim=-1).float().mean().item() for k in ks}
    ''', name=name)
    return Piece(code)


def x_grad_norm(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("global_grad_norm", "gradient_norm"))
    code = render('''
        def $name(model, norm_type=2.0):
            grads = [p.grad.detach() for p in model.parameters() if p.grad is not None]
            if not grads:
                return 0.0
            norms = torch.stack([torch.linalg.vector_norm(g, norm_type) for g in grads])
            return torch.linalg.vector_norm(norms, norm_type).item()
    ''', name=name)
    return Piece(code, hooks={"epoch": f'print(f"gradient norm after epoch {{epoch}}: {{{name}(model):.3f}}")'})


def x_warmup_cosine(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("warmup_cosine", "cosine_with_warmup", "lr_lambda"))
    code = render('''
        def $name(step, warmup_steps, total_steps, floor=$floor):
            """Learning-rate multiplier: linear warm-up, then cosine decay to `floor`."""
            if step < warmup_steps:
                return (step + 1) / warmup_steps
            progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
            return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))
    ''', name=name, floor=ctx.pick(0.0, 0.01, 0.05))
    return Piece(code)


def x_mixup(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("mixup_batch", "mixup"))
    code = render('''
        def $name(inputs, targets, num_classes, alpha=$alpha):
            """Mixes each example with a shuffled partner; returns soft targets."""
            lam = float(np.random.beta(alpha, alpha)) if alpha > 0 else 1.0
            index = torch.randperm(inputs.size(0), device=inputs.device)
            mixed = lam * inputs + (1.0 - lam) * inputs[index]
            soft = F.one_hot(targets, num_classes).float()
            return mixed, lam * soft + (1.0 - lam) * soft[index]
    ''', name=name, alpha=ctx.pick(0.2, 0.4, 1.0))
    return Piece(code)


def x_load_checkpoint(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("load_checkpoint", "restore"))
    code = render('''
        def $name(path, model, optimizer=None, map_location="cpu"):
            if not os.path.exists(path):
                print(f"no checkpoint at {path}; starting from scratch")
                return 0
            state = torch.load(path, map_location=map_location)
            model.load_state_dict(state["model"])
            if optimizer is not None and "optimizer" in state:
                optimizer.load_state_dict(state["optimizer"])
            return state.get("epoch", -1) + 1
    ''', name=name)
    return Piece(code)


def x_snapshot(ctx: Ctx) -> Piece:
    """GL007 when waste is on: zeros, then copy_ over all of it."""
    name = ctx.unique(ctx.pick("flatten_parameters", "snapshot_parameters", "parameter_vector"))
    if ctx.wants("zeros_copy"):
        body = render('''
            flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
            copy = torch.zeros(flat.numel(), device=$dev)
            copy.copy_(flat)
            return copy
        ''', dev=ctx.dev)
    else:
        body = "return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()"
    code = render('''
        def $name(model, $dev):
            """All parameters as one flat vector on the device."""
            $body
    ''', name=name, dev=ctx.dev, body=body)
    var = ctx.unique("initial_params")
    return Piece(code, hooks={"model": f"{var} = {name}(model, {ctx.dev})",
                              "after": f"moved = ({name}(model, {ctx.dev}) - {var}).norm().item()\n"
                                       f'print(f"parameters moved by {{moved:.4f}} in L2 norm")'})


def x_ema(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("ModelEMA", "WeightAverager", "ExponentialAverage"))
    code = render('''
        class $name:
            """Exponential moving average of a model's floating-point state."""

            def __init__(self, model, decay=$decay):
                self.decay = decay
                self.shadow = {k: v.detach().clone() for k, v in model.state_dict().items()}

            @torch.no_grad()
            def update(self, model):
                for k, v in model.state_dict().items():
                    if v.dtype.is_floating_point:
                        self.shadow[k].mul_(self.decay).add_(v.detach(), alpha=1.0 - self.decay)
                    else:
                        self.shadow[k].copy_(v)

            def copy_to(self, model):
                model.load_state_dict(self.shadow)
    ''', name=name, decay=ctx.pick(0.99, 0.999, 0.9995))
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
            hooks["after"].append(render('''
                model.eval()
                with torch.no_grad():
                    for inputs, _ in val_loader:
                        preds = model(inputs.to($dev, non_blocking=True)).argmax(dim=-1)
                        prediction_counts += torch.bincount(preds.reshape(-1), minlength=$classes)
                share = prediction_counts / prediction_counts.sum()
                print(f"most predicted class {share.argmax().item()} ({share.max().item():.1%})")
            ''', dev=d, classes=task.classes))
        else:
            hooks["setup"].append(f"edges = torch.linspace(0.0, 1.0, 11, device={d})")
            hooks["after"].append(render('''
                model.eval()
                with torch.no_grad():
                    confidence = torch.cat([model(x.to($dev)).softmax(dim=-1).amax(dim=-1).reshape(-1)
                                            for x, _ in val_loader])
                print("confidence histogram", torch.bucketize(confidence, edges).bincount(minlength=12).tolist())
            ''', dev=d))
    if ctx.wants("probe"):  # GL006: used before and after the loop that does not use it
        hooks["setup"].append(render('''
            probe = $probe
            with torch.no_grad():
                probe_before = model(probe).softmax(dim=-1)
        ''', probe=task.probe))
        hooks["after"].append(render('''
            with torch.no_grad():
                drift = (model(probe).softmax(dim=-1) - probe_before).abs().sum(dim=-1).mean().item()
            print(f"prediction drift on the probe batch: {drift:.4f}")
        '''))
    if ctx.wants("host_randn"):  # GL102: made on the host only to be copied
        hooks["setup"].append(render('''
            # warm up cuDNN autotuning and the caching allocator before timing
            warmup = $host.$move
            with torch.no_grad(), torch.autocast(device_type="cuda", enabled=args.amp):
                model(warmup)
            del warmup
        ''', host=task.host_probe, move=ctx.pick("cuda()", f"to({d})")))
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
    args = render('''
        def parse_args():
            parser = argparse.ArgumentParser(description="$desc")
            parser.add_argument("--epochs", type=int, default=$epochs)
            parser.add_argument("--batch-size", type=int, default=$bs)
            parser.add_argument("--lr", type=float, default=$lr)
            parser.add_argument("--weight-decay", type=float, default=$wd)
            parser.add_argument("--samples", type=int, default=$samples)
            parser.add_argument("--val-fraction", type=float, default=0.1)
            parser.add_argument("--workers", type=int, default=$workers)
            parser.add_argument("--clip", type=float, default=$clip)
            parser.add_argument("--log-every", type=int, default=$log_every)
            parser.add_argument("--seed", type=int, default=$seed)
            parser.add_argument("--amp", action="store_true", help="mixed precision")
            parser.add_argument("--out", default="$out")
            return parser.parse_args()
    ''', desc=f"Train a {model} on synthetic {task.kind} data.", epochs=ctx.pick(10, 20, 30, 90),
                  bs=ctx.pick(64, 128, 256, 512), lr=ctx.pick(1e-3, 3e-4, 0.1, 0.05),
                  wd=ctx.pick(0.0, 1e-4, 0.01, 0.05), samples=ctx.pick(10000, 20000, 50000),
                  workers=ctx.pick(2, 4, 8), clip=ctx.pick(0.0, 1.0, 5.0), log_every=ctx.pick(50, 100, 200),
                  seed=ctx.rng.randrange(10000), out=ctx.pick("checkpoints", "runs/last"))
    wh = waste_hooks(ctx, task)

    def main_code(extra_hooks: list[dict[str, str]]) -> str:
        hooks = {k: list(v) for k, v in wh.items()}
        for h in extra_hooks:
            for k, v in h.items():
                hooks.setdefault(k, []).append(v)
        return render('''
            def main():
                args = parse_args()
                set_seed(args.seed)
                $start
                $dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                train_loader, val_loader = make_loaders(args)
                model = $model($margs).to($dev)
                $model_hooks
                $optim
                scheduler = $sched
                scaler = torch.cuda.amp.GradScaler(enabled=args.amp)
                $setup
                best_acc = 0.0
                for epoch in range(args.epochs):
                    train_loss, train_acc = train_one_epoch(model, train_loader, optimizer, scaler, $dev, epoch, args)
                    val_loss, val_acc = evaluate(model, val_loader, $dev)
                    scheduler.step()
                    print(f"epoch {epoch:3d} train {train_loss:.4f}/{train_acc:.3f} val {val_loss:.4f}/{val_acc:.3f}")
                    if val_acc > best_acc:
                        best_acc = val_acc
                        save_checkpoint(args.out, model, optimizer, epoch)
                    $epoch_hooks
                $after
                print(f"best validation accuracy {best_acc:.3f}")
        ''', dev=ctx.dev, model=model, margs=task.model_args, optim=optim, sched=sched,
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
        confusion_update = render('''
            preds = logits.argmax(dim=-1).reshape(-1)
            truth = targets.reshape(-1)
        ''')
    else:
        confusion_update = "preds = logits.argmax(dim=-1)\ntruth = targets"
    split_code = render('''
        def synthetic_split(args):
            gen = torch.Generator().manual_seed(args.seed)
            inputs = $data
            targets = $labels
            return DataLoader(TensorDataset(inputs, targets), batch_size=args.batch_size, pin_memory=True)
    ''', data=data, labels=labels)
    metrics_code = render('''
        @torch.inference_mode()
        def collect_metrics(model, loader, $dev, num_classes):
            """Accuracy, loss and a confusion matrix over a loader."""
            model.eval()
            $norm_before
            confusion = torch.zeros(num_classes, num_classes, dtype=torch.long, device=$dev)
            $early_made
            total_loss = 0.0
            for inputs, targets in loader:
                $norm_line
                targets = targets.to($dev)
                logits = model(inputs)
                total_loss += $loss_sum.item()
                $confusion_update
                confusion += torch.bincount(truth * num_classes + preds, minlength=num_classes ** 2).view_as(confusion)
            seen = confusion.sum().clamp_min(1)
            $early_used
            accuracy = confusion.diag().sum().item() / seen.item()
            return accuracy, total_loss / seen.item(), confusion
    ''', dev=d, norm_before=norm_before, norm_line=norm_line, loss_sum=loss_sum,
                          confusion_update=confusion_update, early_made=early_made, early_used=early_used)
    report_code = render('''
        def per_class_report(confusion, top=$top):
            tp = confusion.diag().float()
            precision = tp / confusion.sum(dim=0).clamp_min(1)
            recall = tp / confusion.sum(dim=1).clamp_min(1)
            f1 = 2 * precision * recall / (precision + recall).clamp_min(1e-12)
            worst = torch.argsort(f1)[:top].tolist()
            for c in worst:
                print(f"class {c:4d}: precision {precision[c]:.3f} recall {recall[c]:.3f} f1 {f1[c]:.3f}")
            return f1.mean().item()
    ''', top=ctx.pick(3, 5, 10))
    fixed = model_code + [split_code, metrics_code, report_code]
    bench_input = f"{task.host_probe.replace('16', 'batch_size', 1)}.cuda()" if ctx.wants("host_randn") else \
        task.probe.replace("16", "batch_size", 1)
    flush = "torch.cuda.empty_cache()\n" if ctx.wants("empty_cache") else ""
    fixed.append(render('''
        @torch.inference_mode()
        def benchmark_latency(model, $dev, iters=TIMED_ITERS):
            """Median latency per batch size, measured with CUDA events."""
            results = {}
            for batch_size in BATCH_SIZES:
                $flush
                inputs = $bench_input
                for _ in range(5):
                    model(inputs)
                timings = []
                for _ in range(iters):
                    start = torch.cuda.Event(enable_timing=True)
                    end = torch.cuda.Event(enable_timing=True)
                    start.record()
                    model(inputs)
                    end.record()
                    torch.cuda.synchronize()
                    timings.append(start.elapsed_time(end))
                timings.sort()
                results[batch_size] = timings[len(timings) // 2]
                print(f"batch {batch_size:4d}: {results[batch_size]:.3f} ms, "
                      f"{batch_size * 1000.0 / results[batch_size]:.0f} samples/s")
            return results
    ''', dev=d, flush=flush, bench_input=bench_input))
    args = render('''
        def parse_args():
            parser = argparse.ArgumentParser(description="Evaluate $model and time inference.")
            parser.add_argument("--checkpoint", default="$ckpt")
            parser.add_argument("--samples", type=int, default=$samples)
            parser.add_argument("--batch-size", type=int, default=$bs)
            parser.add_argument("--seed", type=int, default=$seed)
            parser.add_argument("--half", action="store_true")
            parser.add_argument("--results", default="$results")
            return parser.parse_args()
    ''', model=model, ckpt=ctx.pick("checkpoints/best.pt", "model.pt", "runs/last/checkpoint_009.pt"),
                  samples=ctx.pick(2000, 5000, 10000), bs=ctx.pick(128, 256, 512), seed=ctx.rng.randrange(10000),
                  results=ctx.pick("eval.json", "metrics.json"))

    def main_code(extra_hooks: list[dict[str, str]]) -> str:
        hooks: dict[str, list[str]] = {}
        for h in extra_hooks:
            for k, v in h.items():
                hooks.setdefault(k, []).append(v)
        return render('''
            def main():
                args = parse_args()
                $dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                model = $model($margs)
                if os.path.exists(args.checkpoint):
                    state = torch.load(args.checkpoint, map_location="cpu")
                    model.load_state_dict(state.get("model", state))
                model = model.to($dev).eval()
                if args.half:
                    model = model.half()
                $model_hooks
                loader = synthetic_split(args)
                accuracy, loss, confusion = collect_metrics(model, loader, $dev, $classes)
                macro_f1 = per_class_report(confusion)
                metrics = {"accuracy": accuracy, "loss": loss, "macro_f1": macro_f1}
                if $dev.type == "cuda":
                    metrics["latency_ms"] = benchmark_latency(model, $dev)
                $after
                with open(args.results, "w") as handle:
                    json.dump(metrics, handle, indent=2)
                print(json.dumps(metrics, indent=2))
        ''', dev=d, model=model, margs=task.model_args, classes=task.classes,
                      model_hooks="\n".join(hooks.get("model", [])), after="\n".join(hooks.get("after", [])))

    pool = [x_count_parameters, x_timer, x_average_meter, x_env_info, x_topk, x_load_checkpoint, x_eval_calib]
    extras = fill_extras(ctx, pool, fixed + [args], main_code, target)
    doc = f"Evaluate {model}: accuracy, per-class F1 and inference latency per batch size.\n"
    return f"eval_{task.kind}_{model.lower()}", assemble(ctx, doc, fixed + [e.code for e in extras] + [args]
                                                         + [main_code([e.hooks for e in extras])])


def x_eval_calib(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("expected_calibration_error", "calibration_error"))
    code = render('''
        @torch.no_grad()
        def $name(probs, targets, bins=$bins):
            """Expected calibration error of softmax outputs (rows) against integer targets."""
            confidence, predicted = probs.max(dim=-1)
            correct = predicted.eq(targets).float()
            edges = torch.linspace(0, 1, bins + 1, device=probs.device)
            ece = torch.zeros((), device=probs.device)
            for lo, hi in zip(edges[:-1], edges[1:]):
                in_bin = (confidence > lo) & (confidence <= hi)
                if in_bin.any():
                    gap = (confidence[in_bin].mean() - correct[in_bin].mean()).abs()
                    ece += gap * in_bin.float().mean()
            return ece.item()
    ''', name=name, bins=ctx.pick(10, 15, 20))
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
        code = render('''
            class $name(nn.Module):
                """Standardises features with running statistics held in buffers."""

                def __init__(self, features, momentum=$momentum, eps=1e-5):
                    super().__init__()
                    self.momentum = momentum
                    self.eps = eps
                    self.register_buffer("running_mean", torch.zeros(features))
                    self.register_buffer("running_var", torch.ones(features))
                    self.register_buffer("num_batches", torch.tensor(0, dtype=torch.long))

                def forward(self, x):
                    if self.training:
                        mean = x.mean(dim=0)
                        var = x.var(dim=0, unbiased=False)
                        with torch.no_grad():
                            self.running_mean.lerp_(mean, self.momentum)
                            self.running_var.lerp_(var, self.momentum)
                            self.num_batches += 1
                    else:
                        mean, var = self.running_mean, self.running_var
                    return (x - mean) / torch.sqrt(var + self.eps)
        ''', name=name, momentum=c.pick(0.01, 0.05, 0.1))
        return name, code, f"y = {name}(32).to({d})({make_input('8, 32')})"

    def attention(c: Ctx):
        name = c.unique(c.pick("CausalSelfAttention", "MaskedAttention", "SelfAttention"))
        code = render('''
            class $name(nn.Module):
                """Multi-head causal self-attention with a lower-triangular mask buffer."""

                def __init__(self, dim, heads=$heads, max_len=$max_len, dropout=$dropout):
                    super().__init__()
                    assert dim % heads == 0, "dim must be divisible by heads"
                    self.heads = heads
                    self.qkv = nn.Linear(dim, 3 * dim)
                    self.proj = nn.Linear(dim, dim)
                    self.drop = nn.Dropout(dropout)
                    mask = torch.tril(torch.ones(max_len, max_len, dtype=torch.bool))
                    self.register_buffer("mask", mask.view(1, 1, max_len, max_len), persistent=False)

                def forward(self, x):
                    b, t, dim = x.shape
                    q, k, v = self.qkv(x).split(dim, dim=2)
                    q = q.view(b, t, self.heads, -1).transpose(1, 2)
                    k = k.view(b, t, self.heads, -1).transpose(1, 2)
                    v = v.view(b, t, self.heads, -1).transpose(1, 2)
                    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
                    scores = scores.masked_fill(~self.mask[:, :, :t, :t], float("-inf"))
                    weights = self.drop(F.softmax(scores, dim=-1))
                    out = (weights @ v).transpose(1, 2).reshape(b, t, dim)
                    return self.proj(out)
        ''', name=name, heads=c.pick(4, 8), max_len=c.pick(256, 512, 1024), dropout=c.pick(0.0, 0.1))
        return name, code, f"y = {name}(64).to({d})({make_input('2, 32, 64')})"

    def rotary(c: Ctx):
        name = c.unique(c.pick("RotaryEmbedding", "RoPE", "RotaryPositions"))
        code = render('''
            class $name(nn.Module):
                """Rotary position embedding with cached cos/sin tables."""

                def __init__(self, dim, max_len=$max_len, base=10000.0):
                    super().__init__()
                    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
                    self.register_buffer("inv_freq", inv_freq, persistent=False)
                    angles = torch.outer(torch.arange(max_len).float(), inv_freq)
                    self.register_buffer("cos_cached", angles.cos(), persistent=False)
                    self.register_buffer("sin_cached", angles.sin(), persistent=False)

                def forward(self, x):
                    t = x.size(1)
                    cos, sin = self.cos_cached[:t], self.sin_cached[:t]
                    x1, x2 = x[..., 0::2], x[..., 1::2]
                    rotated = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
                    return rotated.flatten(-2)
        ''', name=name, max_len=c.pick(2048, 4096, 8192))
        return name, code, f"y = {name}(32).to({d})({make_input('2, 16, 32')})"

    def squeeze_excite(c: Ctx):
        name = c.unique(c.pick("SqueezeExcite", "SEBlock", "ChannelGate"))
        code = render('''
            class $name(nn.Module):
                def __init__(self, channels, reduction=$reduction):
                    super().__init__()
                    hidden = max(8, channels // reduction)
                    self.pool = nn.AdaptiveAvgPool2d(1)
                    self.fc1 = nn.Conv2d(channels, hidden, kernel_size=1)
                    self.fc2 = nn.Conv2d(hidden, channels, kernel_size=1)

                def forward(self, x):
                    scale = torch.sigmoid(self.fc2(F.relu(self.fc1(self.pool(x)))))
                    return x * scale
        ''', name=name, reduction=c.pick(4, 8, 16))
        return name, code, f"y = {name}(32).to({d})({make_input('2, 32, 8, 8')})"

    def residual(c: Ctx):
        name = c.unique(c.pick("ResidualBlock", "BasicBlock", "PreActBlock"))
        code = render('''
            class $name(nn.Module):
                def __init__(self, cin, cout, stride=1):
                    super().__init__()
                    self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
                    self.bn1 = nn.BatchNorm2d(cout)
                    self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
                    self.bn2 = nn.BatchNorm2d(cout)
                    self.shortcut = nn.Identity()
                    if stride != 1 or cin != cout:
                        self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                                      nn.BatchNorm2d(cout))

                def forward(self, x):
                    out = F.relu(self.bn1(self.conv1(x)))
                    out = self.bn2(self.conv2(out))
                    return F.relu(out + self.shortcut(x))
        ''', name=name)
        return name, code, f"y = {name}(16, 32, stride=2).to({d})({make_input('2, 16, 32, 32')})"

    def swiglu(c: Ctx):
        name = c.unique(c.pick("SwiGLU", "GatedMLP", "GLUFeedForward"))
        code = render('''
            class $name(nn.Module):
                def __init__(self, dim, hidden=None, dropout=$dropout):
                    super().__init__()
                    hidden = hidden or int(8 * dim / 3)
                    self.w1 = nn.Linear(dim, hidden, bias=False)
                    self.w3 = nn.Linear(dim, hidden, bias=False)
                    self.w2 = nn.Linear(hidden, dim, bias=False)
                    self.drop = nn.Dropout(dropout)

                def forward(self, x):
                    return self.drop(self.w2(F.silu(self.w1(x)) * self.w3(x)))
        ''', name=name, dropout=c.pick(0.0, 0.1))
        return name, code, f"y = {name}(64).to({d})({make_input('2, 16, 64')})"

    def rmsnorm(c: Ctx):
        name = c.unique(c.pick("RMSNorm", "RootMeanSquareNorm"))
        code = render('''
            class $name(nn.Module):
                def __init__(self, dim, eps=$eps):
                    super().__init__()
                    self.eps = eps
                    self.weight = nn.Parameter(torch.ones(dim))

                def forward(self, x):
                    rms = torch.rsqrt(x.float().pow(2).mean(dim=-1, keepdim=True) + self.eps)
                    return (x.float() * rms).type_as(x) * self.weight
        ''', name=name, eps=c.pick(1e-5, 1e-6))
        return name, code, f"y = {name}(64).to({d})({make_input('2, 16, 64')})"

    def focal(c: Ctx):
        name = c.unique(c.pick("FocalLoss", "SoftmaxFocalLoss"))
        code = render('''
            class $name(nn.Module):
                """Focal loss; `alpha` is a per-class weight buffer."""

                def __init__(self, num_classes, gamma=$gamma):
                    super().__init__()
                    self.gamma = gamma
                    self.register_buffer("alpha", torch.full((num_classes,), 1.0 / num_classes))

                def forward(self, logits, targets):
                    log_probs = F.log_softmax(logits, dim=-1)
                    log_pt = log_probs.gather(1, targets.unsqueeze(1)).squeeze(1)
                    weight = self.alpha[targets] * (1.0 - log_pt.exp()) ** self.gamma
                    return -(weight * log_pt).mean()
        ''', name=name, gamma=c.pick(1.0, 2.0))
        test = (f"targets = torch.randint(0, 10, (8,), device={d})\n"
                f"y = {name}(10).to({d})({make_input('8, 10')}, targets)")
        return name, code, test

    def patch_embed(c: Ctx):
        name = c.unique(c.pick("PatchEmbed", "PatchEmbedding", "ViTStem"))
        code = render('''
            class $name(nn.Module):
                """Splits an image into patches, projects them and adds a class token and positions."""

                def __init__(self, image_size=32, patch=$patch, in_channels=3, dim=$dim):
                    super().__init__()
                    self.proj = nn.Conv2d(in_channels, dim, kernel_size=patch, stride=patch)
                    patches = (image_size // patch) ** 2
                    self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
                    self.pos_embed = nn.Parameter(torch.zeros(1, patches + 1, dim))
                    nn.init.trunc_normal_(self.pos_embed, std=0.02)

                def forward(self, x):
                    x = self.proj(x).flatten(2).transpose(1, 2)
                    cls = self.cls_token.expand(x.size(0), -1, -1)
                    return torch.cat([cls, x], dim=1) + self.pos_embed
        ''', name=name, patch=c.pick(4, 8), dim=c.pick(192, 384))
        return name, code, f"y = {name}().to({d})({make_input('2, 3, 32, 32')})"

    def kv_cache(c: Ctx):
        name = c.unique(c.pick("KVCache", "KeyValueCache", "DecodeCache"))
        code = render('''
            class $name(nn.Module):
                """Pre-allocated key/value cache for incremental decoding."""

                def __init__(self, max_batch, max_len, dim):
                    super().__init__()
                    self.register_buffer("keys", torch.zeros(max_batch, max_len, dim), persistent=False)
                    self.register_buffer("values", torch.zeros(max_batch, max_len, dim), persistent=False)
                    self.length = 0

                def reset(self):
                    self.length = 0

                def forward(self, k, v):
                    b, t, _ = k.shape
                    end = self.length + t
                    self.keys[:b, self.length:end] = k
                    self.values[:b, self.length:end] = v
                    self.length = end
                    return self.keys[:b, :end], self.values[:b, :end]
        ''', name=name)
        test = (f"cache = {name}(4, {c.pick(128, 256, 2048)}, 64).to({d})\n"
                f"kv = {make_input('2, 8, 64')}\n"
                f"y, _ = cache(kv, kv)")
        return name, code, test

    def drop_path(c: Ctx):
        name = c.unique(c.pick("DropPath", "StochasticDepth"))
        code = render('''
            class $name(nn.Module):
                def __init__(self, p=$p):
                    super().__init__()
                    self.p = p

                def forward(self, x):
                    if not self.training or self.p == 0.0:
                        return x
                    keep = 1.0 - self.p
                    mask = x.new_empty((x.size(0),) + (1,) * (x.dim() - 1)).bernoulli_(keep)
                    return x * mask / keep
        ''', name=name, p=c.pick(0.1, 0.2))
        return name, code, f"y = {name}().to({d})({make_input('4, 16, 64')})"

    def lora(c: Ctx):
        name = c.unique(c.pick("LoRALinear", "LowRankAdapter"))
        code = render('''
            class $name(nn.Module):
                """A frozen linear layer plus a trainable low-rank update."""

                def __init__(self, in_features, out_features, rank=$rank, alpha=$alpha):
                    super().__init__()
                    self.base = nn.Linear(in_features, out_features)
                    self.base.requires_grad_(False)
                    self.lora_a = nn.Parameter(torch.randn(rank, in_features) / math.sqrt(in_features))
                    self.lora_b = nn.Parameter(torch.zeros(out_features, rank))
                    self.scaling = alpha / rank

                def forward(self, x):
                    return self.base(x) + (x @ self.lora_a.t() @ self.lora_b.t()) * self.scaling
        ''', name=name, rank=c.pick(4, 8, 16), alpha=c.pick(8, 16, 32))
        return name, code, f"y = {name}(64, 32).to({d})({make_input('4, 64')})"

    def moe(c: Ctx):
        name = c.unique(c.pick("MixtureOfExperts", "SparseMoE", "TopKRouter"))
        code = render('''
            class $name(nn.Module):
                def __init__(self, dim, experts=$experts, k=2):
                    super().__init__()
                    self.k = k
                    self.router = nn.Linear(dim, experts, bias=False)
                    self.experts = nn.ModuleList(nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(),
                                                               nn.Linear(2 * dim, dim)) for _ in range(experts))

                def forward(self, x):
                    flat = x.reshape(-1, x.size(-1))
                    weights, chosen = self.router(flat).softmax(dim=-1).topk(self.k, dim=-1)
                    out = torch.zeros_like(flat)
                    for e, expert in enumerate(self.experts):
                        rows, slot = (chosen == e).nonzero(as_tuple=True)
                        if rows.numel():
                            out.index_add_(0, rows, expert(flat[rows]) * weights[rows, slot].unsqueeze(1))
                    return out.view_as(x)
        ''', name=name, experts=c.pick(4, 8))
        return name, code, f"y = {name}(32).to({d})({make_input('2, 8, 32')})"

    def label_smoothing(c: Ctx):
        name = c.unique(c.pick("LabelSmoothingLoss", "SmoothedCrossEntropy"))
        code = render('''
            class $name(nn.Module):
                def __init__(self, smoothing=$smoothing):
                    super().__init__()
                    self.smoothing = smoothing

                def forward(self, logits, targets):
                    log_probs = logits.log_softmax(dim=-1)
                    nll = -log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
                    smooth = -log_probs.mean(dim=-1)
                    return ((1.0 - self.smoothing) * nll + self.smoothing * smooth).mean()
        ''', name=name, smoothing=c.pick(0.05, 0.1, 0.2))
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
        return render('''
            MODULES = {$registry}


            def build(name, *args, **kwargs):
                try:
                    return MODULES[name.lower()](*args, **kwargs)
                except KeyError:
                    raise ValueError(f"unknown module {name!r}; known: {sorted(MODULES)}") from None


            @torch.no_grad()
            def smoke_test():
                $dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                torch.manual_seed(0)
                for check in CHECKS:
                    check($dev)
                    $flush


            $tests
        ''', registry=registry, dev=d, flush=flush, tests="\n\n\n".join(
            render('''
                def check_$n($dev):
                    $body
            ''', n=i, dev=d, body=t) for i, t in enumerate(tests))) + "\n\n\nCHECKS = [" + \
            "".join(f"\n    check_{i}," for i in range(len(tests))) + "\n]"

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
    pieces = [render('''
        class $dataset(Dataset):
            """Deterministic random images: item `i` is always the same picture."""

            def __init__(self, size, seed=$seed):
                self.size = size
                self.seed = seed

            def __len__(self):
                return self.size

            def __getitem__(self, index):
                gen = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
                image = torch.randint(0, 256, (3, IMAGE_SIZE, IMAGE_SIZE), dtype=torch.uint8, generator=gen)
                label = int(torch.randint(0, NUM_CLASSES, (1,), generator=gen))
                return image, label
    ''', dataset=dataset, seed=ctx.rng.randrange(1000)), render('''
        class $prefetcher:
            """Overlaps host-to-device copies with compute on a side stream."""

            def __init__(self, loader, $dev):
                self.loader = loader
                self.device = $dev
                self.stream = torch.cuda.Stream(device=$dev)
                self.iterator = None
                self.next_batch = None

            def __len__(self):
                return len(self.loader)

            def __iter__(self):
                self.iterator = iter(self.loader)
                self._preload()
                return self

            def _preload(self):
                try:
                    images, labels = next(self.iterator)
                except StopIteration:
                    self.next_batch = None
                    return
                with torch.cuda.stream(self.stream):
                    images = images.to(self.device, non_blocking=True)
                    labels = labels.to(self.device, non_blocking=True)
                self.next_batch = (images, labels)

            def __next__(self):
                if self.next_batch is None:
                    raise StopIteration
                current = torch.cuda.current_stream(self.device)
                current.wait_stream(self.stream)
                images, labels = self.next_batch
                images.record_stream(current)
                labels.record_stream(current)
                self._preload()
                return images, labels
    ''', prefetcher=prefetcher, dev=d), render('''
        def gpu_augment(images, flip_prob=$flip, jitter=$jitter):
            """Random horizontal flips and brightness jitter on a float batch already on the GPU."""
            n = images.size(0)
            flip = torch.rand(n, device=images.device) < flip_prob
            images = torch.where(flip.view(n, 1, 1, 1), images.flip(-1), images)
            scale = 1.0 + jitter * (2.0 * torch.rand(n, 1, 1, 1, device=images.device) - 1.0)
            return (images * scale).clamp_(0.0, 1.0)
    ''', flip=ctx.pick(0.5, 0.25), jitter=ctx.pick(0.1, 0.2, 0.4))]
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
    pieces.append(render('''
        def measure(loader, $dev, epochs, augment=True):
            """Images per second through loading, copying, augmenting and normalising."""
            $norm_before
            channel_sum = torch.zeros(3, device=$dev)
            channel_sq = torch.zeros(3, device=$dev)
            $early_made
            seen = 0
            $warm
            for epoch in range(epochs):
                start = time.perf_counter()
                count = 0
                for images, labels in loader:
                    images = images.float().div_(255.0)
                    if augment:
                        images = gpu_augment(images)
                    $norm
                    channel_sum += images.sum(dim=(0, 2, 3))
                    channel_sq += (images * images).sum(dim=(0, 2, 3))
                    count += images.size(0)
                torch.cuda.synchronize()
                seen += count
                elapsed = time.perf_counter() - start
                print(f"epoch {epoch}: {count} images in {elapsed:.2f} s ({count / elapsed:.0f} images/s)")
                $flush
            pixels = seen * IMAGE_SIZE * IMAGE_SIZE
            mean_out = channel_sum / max(pixels, 1)
            std_out = (channel_sq / max(pixels, 1) - mean_out ** 2).clamp_min(0).sqrt()
            $early_used
            return mean_out.tolist(), std_out.tolist()
    ''', dev=d, norm_before=norm_before, norm=norm, flush=flush, warm=warm,
                         early_made=f"label_hist = torch.zeros(NUM_CLASSES, device={d})" if early else "",
                         early_used=("for _, labels in loader:\n"
                                     "    label_hist += torch.bincount(labels, minlength=NUM_CLASSES)\n"
                                     'print(f"label balance: min {label_hist.min().item():.0f} "\n'
                                     '      f"max {label_hist.max().item():.0f}")')
                         if early else ""))
    args = render('''
        def parse_args():
            parser = argparse.ArgumentParser(description="Measure the input pipeline's throughput.")
            parser.add_argument("--size", type=int, default=$size)
            parser.add_argument("--batch-size", type=int, default=$bs)
            parser.add_argument("--workers", type=int, default=$workers)
            parser.add_argument("--epochs", type=int, default=$epochs)
            parser.add_argument("--no-augment", action="store_true")
            return parser.parse_args()
    ''', size=ctx.pick(5000, 10000, 50000), bs=ctx.pick(64, 128, 256), workers=ctx.pick(4, 8, 16),
                  epochs=ctx.pick(2, 3, 5))

    def main_code(extra_hooks: list[dict[str, str]]) -> str:
        calls = "\n".join(h["main"] for h in extra_hooks if "main" in h)
        return render('''
            def main():
                args = parse_args()
                $dev = torch.device("cuda")
                dataset = $dataset(args.size)
                loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                                    pin_memory=True, persistent_workers=args.workers > 0, drop_last=True)
                $calls
                mean, std = measure($prefetcher(loader, $dev), $dev, args.epochs, augment=not args.no_augment)
                print("per-channel mean", [round(m, 4) for m in mean])
                print("per-channel std ", [round(s, 4) for s in std])
        ''', dev=d, dataset=dataset, prefetcher=prefetcher, calls=calls)

    extras = fill_extras(ctx, DATA_EXTRAS, pieces + [args], main_code, target)
    doc = (f"Input pipeline benchmark: {dataset} -> DataLoader -> {prefetcher} -> GPU augmentation.\n\n"
           f"Reports images/s per epoch and the per-channel statistics of what the model would see.\n")
    return f"data_{dataset.lower()}", assemble(ctx, doc, pieces + [e.code for e in extras] + [args]
                                               + [main_code([e.hooks for e in extras])])


def dx_collate(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("pad_collate", "collate_variable_length", "collate_sequences"))
    code = render('''
        def $name(batch, pad_value=0):
            """Pads variable-length 1-D sequences to the longest one; returns tokens, lengths and a mask."""
            lengths = torch.tensor([len(seq) for seq, _ in batch])
            longest = int(lengths.max())
            tokens = torch.full((len(batch), longest), pad_value, dtype=torch.long)
            for row, (seq, _) in enumerate(batch):
                tokens[row, :len(seq)] = torch.as_tensor(seq)
            labels = torch.tensor([label for _, label in batch])
            mask = torch.arange(longest).unsqueeze(0) < lengths.unsqueeze(1)
            return tokens, labels, mask
    ''', name=name)
    return Piece(code)


def dx_normalize_module(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("GPUNormalize", "NormalizeOnDevice"))
    code = render('''
        class $name(nn.Module):
            """Normalisation as a module, so that mean and std move with `.to(device)`."""

            def __init__(self, mean=MEAN, std=STD):
                super().__init__()
                self.register_buffer("mean", torch.tensor(mean).view(1, -1, 1, 1))
                self.register_buffer("std", torch.tensor(std).view(1, -1, 1, 1))

            def forward(self, images):
                return (images - self.mean) / self.std
    ''', name=name)
    return Piece(code)


def dx_sampler_weights(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("balanced_sample_weights", "inverse_frequency_weights"))
    code = render('''
        def $name(labels, num_classes=NUM_CLASSES):
            """Per-sample weights for a WeightedRandomSampler that balances the classes."""
            counts = torch.bincount(torch.as_tensor(labels), minlength=num_classes).float()
            per_class = 1.0 / counts.clamp_min(1.0)
            return per_class[torch.as_tensor(labels)]
    ''', name=name)
    return Piece(code)


def dx_pinned_pool(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("PinnedBufferPool", "StagingBuffers"))
    code = render('''
        class $name:
            """A few page-locked host buffers reused for staging copies."""

            def __init__(self, shape, count=$count, dtype=torch.uint8):
                self.buffers = [torch.empty(shape, dtype=dtype, pin_memory=True) for _ in range(count)]
                self.next = 0

            def acquire(self):
                buffer = self.buffers[self.next]
                self.next = (self.next + 1) % len(self.buffers)
                return buffer
    ''', name=name, count=ctx.pick(2, 3, 4))
    return Piece(code)


def dx_cutout(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("gpu_cutout", "random_erase"))
    code = render('''
        def $name(images, size=$size):
            """Zeroes one random square per image (cutout), on the GPU."""
            n, _, h, w = images.shape
            cy = torch.randint(0, h, (n, 1, 1), device=images.device)
            cx = torch.randint(0, w, (n, 1, 1), device=images.device)
            ys = torch.arange(h, device=images.device).view(1, h, 1)
            xs = torch.arange(w, device=images.device).view(1, 1, w)
            inside = ((ys - cy).abs() <= size // 2) & ((xs - cx).abs() <= size // 2)
            return images.masked_fill(inside.unsqueeze(1), 0.0)
    ''', name=name, size=ctx.pick(8, 12, 16))
    return Piece(code)


def dx_loader_stats(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("time_loader_only", "host_side_throughput"))
    code = render('''
        def $name(loader, batches=$batches):
            """Batches per second of the DataLoader alone, without any device work."""
            start = time.perf_counter()
            for i, _ in enumerate(loader):
                if i + 1 >= batches:
                    break
            elapsed = time.perf_counter() - start
            print(f"loader alone: {batches / elapsed:.1f} batches/s")
            return batches / elapsed
    ''', name=name, batches=ctx.pick(20, 50, 100))
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
        return render('''
            def main():
                rng = np.random.default_rng(SEED)
                host_points = rng.standard_normal((N_POINTS, DIM)).astype(np.float32)
                points = cp.asarray(host_points)
                $setup
                start, stop = cp.cuda.Event(), cp.cuda.Event()
                scores = []
                start.record()
                for trial in range(TRIALS):
                    $loop
                stop.record()
                stop.synchronize()
                print(f"{TRIALS} trials in {cp.cuda.get_elapsed_time(start, stop):.2f} ms, spread {np.std(scores):.4f}")
                $after
                $calls
                print("covariance trace", float(cp.trace(cov)))
        ''', setup="\n".join(setup), loop="\n".join(loop), after="\n".join(after), calls=calls)

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
    return cupy_piece(render('''
        def $name(a, b):
            """Squared Euclidean distances between the rows of `a` and of `b`."""
            aa = (a * a).sum(axis=1)[:, None]
            bb = (b * b).sum(axis=1)[None, :]
            return cp.maximum(aa + bb - 2.0 * a @ b.T, 0.0)
    ''', name=name), f'print("nearest pair", float({name}(points[:512], points[512:1024]).min()))')


def cx_kmeans(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("kmeans", "lloyd", "cluster_points"))
    return cupy_piece(render('''
        def $name(points, k=$k, iters=$iters):
            """Lloyd's algorithm; returns the centres and the label of every point."""
            idx = cp.random.permutation(points.shape[0])[:k]
            centers = points[idx]
            labels = cp.zeros(points.shape[0], dtype=cp.int64)
            for _ in range(iters):
                d2 = (points * points).sum(axis=1)[:, None] - 2.0 * points @ centers.T + (centers * centers).sum(axis=1)
                labels = d2.argmin(axis=1)
                counts = cp.bincount(labels, minlength=k).astype(points.dtype)
                sums = cp.zeros_like(centers)
                cp.add.at(sums, labels, points)
                centers = sums / cp.maximum(counts, 1.0)[:, None]
            return centers, labels
    ''', name=name, k=ctx.pick(8, 16, 32), iters=ctx.pick(10, 20, 50)),
                      f'centers, labels = {name}(points)\nprint("cluster sizes", cp.asnumpy(cp.bincount(labels))[:8])')


def cx_power(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("power_iteration", "top_eigenvalue"))
    return cupy_piece(render('''
        def $name(mat, iters=$iters, tol=1e-6):
            """Largest eigenvalue (in magnitude) of a symmetric matrix."""
            v = cp.random.standard_normal(mat.shape[0], dtype=mat.dtype)
            v /= cp.linalg.norm(v)
            value = 0.0
            for _ in range(iters):
                w = mat @ v
                new_value = float(v @ w)
                v = w / cp.linalg.norm(w)
                if abs(new_value - value) < tol * max(abs(new_value), 1.0):
                    return new_value
                value = new_value
            return value
    ''', name=name, iters=ctx.pick(100, 200, 500)), f'print("top eigenvalue", {name}(cov))')


def cx_cg(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("conjugate_gradient", "cg_solve"))
    return cupy_piece(render('''
        def $name(a, b, tol=1e-8, max_iter=$max_iter):
            """Solves a x = b for a symmetric positive definite `a`."""
            x = cp.zeros_like(b)
            r = b - a @ x
            p = r.copy()
            rs = float(r @ r)
            for _ in range(max_iter):
                ap = a @ p
                alpha = rs / float(p @ ap)
                x += alpha * p
                r -= alpha * ap
                rs_new = float(r @ r)
                if rs_new < tol * tol:
                    break
                p = r + (rs_new / rs) * p
                rs = rs_new
            return x
    ''', name=name, max_iter=ctx.pick(200, 500, 1000)),
                      f"solution = {name}(cov + cp.eye(DIM, dtype=cov.dtype), cp.ones(DIM, dtype=cov.dtype))\n"
                      f'print("residual", float(cp.linalg.norm((cov + cp.eye(DIM)) @ solution - 1.0)))')


def cx_fft(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("lowpass", "fft_lowpass", "spectral_filter"))
    return cupy_piece(render('''
        def $name(signal, cutoff=$cutoff):
            """Zeroes every frequency above `cutoff` (a fraction of Nyquist) along the last axis."""
            spectrum = cp.fft.rfft(signal, axis=-1)
            keep = int(spectrum.shape[-1] * cutoff)
            spectrum[..., keep:] = 0
            return cp.fft.irfft(spectrum, n=signal.shape[-1], axis=-1)
    ''', name=name, cutoff=ctx.pick(0.1, 0.25, 0.5)), f'print("smoothed std", float({name}(points.T).std()))')


def cx_softmax(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("softmax_rows", "row_softmax"))
    return cupy_piece(render('''
        def $name(x, temperature=1.0):
            z = x / temperature
            z = z - z.max(axis=1, keepdims=True)
            e = cp.exp(z)
            return e / e.sum(axis=1, keepdims=True)
    ''', name=name), f'print("max probability", float({name}(points[:1000]).max()))')


def cx_elementwise(ctx: Ctx) -> Piece:
    kern = ctx.unique(ctx.pick("_saxpy", "_axpy_kernel", "_fused_axpy"))
    name = ctx.unique(ctx.pick("saxpy", "axpy", "scaled_add"))
    ctx.const(kern.upper(), f'cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", '
              f'"z = a * x + y", "{kern.strip("_")}")')
    return cupy_piece(render('''
        def $name(a, x, y):
            """z = a * x + y in one fused kernel."""
            return $KERN(cp.float32(a), x.astype(cp.float32, copy=False), y.astype(cp.float32, copy=False))
    ''', name=name, KERN=kern.upper()), f'print("axpy checksum", float({name}(2.0, points[:, 0], points[:, 1]).sum()))')


def cx_raw(ctx: Ctx) -> Piece:
    src = ctx.unique("_SCALE_ROWS_SRC")
    kern = ctx.unique("_SCALE_ROWS")
    name = ctx.unique(ctx.pick("scale_rows", "row_scale"))
    threads = ctx.pick(128, 256)
    code = render('''
        $src = r"""
        extern "C" __global__ void scale_rows(const float* x, const float* s, float* y, int rows, int cols)
        {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < rows * cols) {
                y[i] = x[i] * s[i / cols];
            }
        }
        """
        $kern = cp.RawKernel($src, "scale_rows")


        def $name(x, scales, threads=$threads):
            """Multiplies row i of a C-contiguous float32 matrix by scales[i]."""
            x = cp.ascontiguousarray(x, dtype=cp.float32)
            y = cp.empty_like(x)
            rows, cols = x.shape
            blocks = (rows * cols + threads - 1) // threads
            $kern((blocks,), (threads,), (x, scales.astype(cp.float32), y, cp.int32(rows), cp.int32(cols)))
            return y
    ''', src=src, kern=kern, name=name, threads=threads)
    return cupy_piece(code, f'print("scaled", float({name}(points[:1024], cp.arange(1024)).sum()))')


def cx_reduction(ctx: Ctx) -> Piece:
    kern = ctx.unique("_L2NORM")
    name = ctx.unique(ctx.pick("l2_norm", "vector_norm"))
    ctx.const(kern, 'cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")')
    return cupy_piece(render('''
        def $name(x, axis=None):
            return $kern(x, axis=axis)
    ''', name=name, kern=kern), f'print("norm of the first column", float({name}(points[:, 0])))')


def cx_moving_average(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("moving_average", "running_mean"))
    return cupy_piece(render('''
        def $name(x, window=$window):
            """Moving average along axis 0 via a cumulative sum."""
            c = cp.cumsum(x, axis=0, dtype=cp.float64)
            c[window:] = c[window:] - c[:-window]
            return (c[window - 1:] / window).astype(x.dtype)
    ''', name=name, window=ctx.pick(5, 16, 64)), f'print("smoothed", float({name}(points).mean()))')


def cx_histeq(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("equalize_histogram", "histogram_equalization"))
    return cupy_piece(render('''
        def $name(image, bins=256):
            """Histogram equalisation of an 8-bit image."""
            hist = cp.bincount(image.ravel(), minlength=bins)
            cdf = cp.cumsum(hist).astype(cp.float32)
            cdf = (cdf - cdf.min()) / max(float(cdf.max() - cdf.min()), 1.0) * (bins - 1)
            return cdf.astype(cp.uint8)[image]
    ''', name=name), f'print("equalised mean", float({name}((cp.abs(points[:, :4]) * 40).astype(cp.uint8)).mean()))')


def cx_gemm_bench(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("gemm_tflops", "benchmark_matmul"))
    return cupy_piece(render('''
        def $name(n=$n, reps=$reps, dtype=cp.float32):
            a = cp.random.random((n, n)).astype(dtype)
            b = cp.random.random((n, n)).astype(dtype)
            a @ b
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(reps):
                c = a @ b
            stop.record()
            stop.synchronize()
            seconds = cp.cuda.get_elapsed_time(start, stop) / 1000.0
            print(f"{n}x{n} matmul: {2.0 * n ** 3 * reps / seconds / 1e12:.2f} TFLOP/s (checksum {float(c[0, 0]):.3f})")
    ''', name=name, n=ctx.pick(1024, 2048, 4096), reps=ctx.pick(10, 20)), f"{name}()")


def cx_memory(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("memory_report", "pool_usage"))
    return cupy_piece(render('''
        def $name(prefix=""):
            pool = cp.get_default_memory_pool()
            pinned = cp.get_default_pinned_memory_pool()
            free, total = cp.cuda.runtime.memGetInfo()
            print(f"{prefix}pool used {pool.used_bytes() / 2**20:.1f} MiB of {pool.total_bytes() / 2**20:.1f} MiB, "
                  f"pinned free blocks {pinned.n_free_blocks()}, device {free / 2**30:.2f}/{total / 2**30:.2f} GiB")
    ''', name=name), f'{name}("after the trials: ")')


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
    stencil = render('''
        @cuda.jit
        def $kernel(src, dst, coeffs):
            y, x = cuda.grid(2)
            ny, nx = src.shape
            if 0 < y < ny - 1 and 0 < x < nx - 1:
                dst[y, x] = (coeffs[0] * src[y, x] + coeffs[1] * (src[y - 1, x] + src[y + 1, x])
                             + coeffs[2] * (src[y, x - 1] + src[y, x + 1]))
            elif y < ny and x < nx:
                dst[y, x] = src[y, x]
    ''', kernel=kernel)
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
        res_kernel = render('''
            @cuda.jit
            def residual_norm(a, out):
                y, x = cuda.grid(2)
                ny, nx = a.shape
                if 0 < y < ny - 1 and 0 < x < nx - 1:
                    r = 4.0 * a[y, x] - a[y - 1, x] - a[y + 1, x] - a[y, x - 1] - a[y, x + 1]
                    cuda.atomic.add(out, 0, r * r)
        ''')
        ctx.used.add("residual_norm")
    else:
        res_kernel = ""
    if ctx.wants("zeros_copy"):  # GL007: to_device(zeros) initialises, copy_to_device overwrites
        init = ("d_a = cuda.to_device(np.zeros((GRID, GRID), dtype=np.float32))\n"
                "d_a.copy_to_device(field)")
    else:
        init = "d_a = cuda.to_device(field)"
    driver_code = render('''
        def $driver_fn(steps=ITERS, alpha=$alpha):
            """Explicit diffusion on a GRID x GRID plate with a hot square in the middle."""
            field = np.zeros((GRID, GRID), dtype=np.float32)
            field[GRID // 4:3 * GRID // 4, GRID // 4:3 * GRID // 4] = 1.0
            coeffs = np.array([1.0 - 4.0 * alpha, alpha, alpha], dtype=np.float32)
            threads = (16, 16)
            blocks = ((GRID + threads[0] - 1) // threads[0], (GRID + threads[1] - 1) // threads[1])
            $init
            $before
            for _ in range(steps):
                $inside
            cuda.synchronize()
            $after
            return d_a.copy_to_host()
    ''', driver_fn=driver_fn, alpha=ctx.pick(0.1, 0.2, 0.24), init=init,
                         before="\n".join(before), inside="\n".join(inside), after="\n".join(after))
    pieces = [stencil] + ([res_kernel] if res_kernel else []) + [driver_code]

    def main_code(hooks: list[dict[str, str]]) -> str:
        calls = "\n".join(h["main"] for h in hooks if "main" in h)
        return render('''
            def main():
                if not cuda.is_available():
                    print("no CUDA device; nothing to do")
                    return
                cuda.detect()
                $rng_line
                start = time.perf_counter()
                plate = $driver_fn()
                print(f"stencil: {time.perf_counter() - start:.2f} s, total heat {plate.sum():.3f}")
                $calls
        ''', driver_fn=driver_fn, calls=calls,
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
    return nb_piece(render('''
        @cuda.jit
        def $k(a, x, y, out):
            i = cuda.grid(1)
            if i < out.shape[0]:
                out[i] = a * x[i] + y[i]


        def $w(a, x, y, stream=0):
            d_x = cuda.to_device(x, stream=stream)
            d_y = cuda.to_device(y, stream=stream)
            d_out = cuda.device_array_like(d_x, stream=stream)
            blocks = (x.size + THREADS - 1) // THREADS
            $k[blocks, THREADS, stream](a, d_x, d_y, d_out)
            return d_out.copy_to_host(stream=stream)
    ''', k=k, w=w), render('''
        x = rng.standard_normal(N).astype(np.float32)
        y = rng.standard_normal(N).astype(np.float32)
        np.testing.assert_allclose($w(np.float32(2.0), x, y), 2.0 * x + y, rtol=1e-5)
    ''', w=w))


def nb_reduce(ctx: Ctx) -> Piece:
    k = ctx.unique(ctx.pick("block_sum", "partial_sums", "reduce_kernel"))
    w = ctx.unique(ctx.pick("gpu_sum", "device_sum"))
    return nb_piece(render('''
        @cuda.jit
        def $k(x, partial):
            tile = cuda.shared.array(THREADS, dtype=float32)
            tid = cuda.threadIdx.x
            i = cuda.grid(1)
            tile[tid] = x[i] if i < x.shape[0] else 0.0
            cuda.syncthreads()
            s = THREADS // 2
            while s > 0:
                if tid < s:
                    tile[tid] += tile[tid + s]
                cuda.syncthreads()
                s //= 2
            if tid == 0:
                partial[cuda.blockIdx.x] = tile[0]


        def $w(x):
            blocks = (x.size + THREADS - 1) // THREADS
            d_x = cuda.to_device(x.astype(np.float32))
            d_partial = cuda.device_array(blocks, dtype=np.float32)
            $k[blocks, THREADS](d_x, d_partial)
            return float(d_partial.copy_to_host().sum(dtype=np.float64))
    ''', k=k, w=w), render('''
        values = rng.random(N).astype(np.float32)
        print("sum", $w(values), "numpy", float(values.sum(dtype=np.float64)))
    ''', w=w))


def nb_matmul(ctx: Ctx) -> Piece:
    ctx.const("TPB", 16)
    k = ctx.unique(ctx.pick("fast_matmul", "matmul_shared", "tiled_gemm"))
    w = ctx.unique(ctx.pick("gpu_matmul", "matmul"))
    return nb_piece(render('''
        @cuda.jit
        def $k(a, b, c):
            sa = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
            sb = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
            x, y = cuda.grid(2)
            tx = cuda.threadIdx.x
            ty = cuda.threadIdx.y
            acc = float32(0.0)
            for tile in range((a.shape[1] + TPB - 1) // TPB):
                sa[ty, tx] = 0.0
                sb[ty, tx] = 0.0
                if y < a.shape[0] and tx + tile * TPB < a.shape[1]:
                    sa[ty, tx] = a[y, tx + tile * TPB]
                if x < b.shape[1] and ty + tile * TPB < b.shape[0]:
                    sb[ty, tx] = b[ty + tile * TPB, x]
                cuda.syncthreads()
                for j in range(TPB):
                    acc += sa[ty, j] * sb[j, tx]
                cuda.syncthreads()
            if y < c.shape[0] and x < c.shape[1]:
                c[y, x] = acc


        def $w(a, b):
            d_a = cuda.to_device(a)
            d_b = cuda.to_device(b)
            d_c = cuda.device_array((a.shape[0], b.shape[1]), dtype=np.float32)
            blocks = ((b.shape[1] + TPB - 1) // TPB, (a.shape[0] + TPB - 1) // TPB)
            $k[blocks, (TPB, TPB)](d_a, d_b, d_c)
            return d_c.copy_to_host()
    ''', k=k, w=w), render('''
        a = rng.random(($n, $n), dtype=np.float32)
        b = rng.random(($n, $n), dtype=np.float32)
        np.testing.assert_allclose($w(a, b), a @ b, rtol=1e-3)
    ''', w=w, n=ctx.pick(256, 512)))


def nb_hist(ctx: Ctx) -> Piece:
    ctx.const("BINS", ctx.pick(64, 128, 256))
    k = ctx.unique(ctx.pick("histogram_kernel", "hist_atomic"))
    w = ctx.unique(ctx.pick("gpu_histogram", "histogram"))
    return nb_piece(render('''
        @cuda.jit
        def $k(values, lo, hi, bins):
            start = cuda.grid(1)
            stride = cuda.gridsize(1)
            width = (hi - lo) / bins.shape[0]
            for i in range(start, values.shape[0], stride):
                b = int32((values[i] - lo) / width)
                if 0 <= b < bins.shape[0]:
                    cuda.atomic.add(bins, b, 1)


        def $w(values, lo=-4.0, hi=4.0):
            d_values = cuda.to_device(values)
            d_bins = cuda.to_device(np.zeros(BINS, dtype=np.int32))
            $k[$blocks, THREADS](d_values, lo, hi, d_bins)
            return d_bins.copy_to_host()
    ''', k=k, w=w, blocks=ctx.pick(64, 128, 256)), render('''
        counts = $w(rng.standard_normal(N).astype(np.float32))
        print("histogram peak at bin", int(counts.argmax()), "of", BINS)
    ''', w=w))


def nb_mandelbrot(ctx: Ctx) -> Piece:
    dev = ctx.unique(ctx.pick("escape_time", "mandel_iter"))
    k = ctx.unique(ctx.pick("mandelbrot_kernel", "fractal_kernel"))
    w = ctx.unique(ctx.pick("mandelbrot", "render_fractal"))
    return nb_piece(render('''
        @cuda.jit(device=True)
        def $dev(x, y, max_iters):
            c = complex(x, y)
            z = 0.0j
            for i in range(max_iters):
                z = z * z + c
                if (z.real * z.real + z.imag * z.imag) >= 4:
                    return i
            return max_iters


        @cuda.jit
        def $k(min_x, max_x, min_y, max_y, image, iters):
            height, width = image.shape
            pixel_x = (max_x - min_x) / width
            pixel_y = (max_y - min_y) / height
            x, y = cuda.grid(2)
            if x < width and y < height:
                image[y, x] = $dev(min_x + x * pixel_x, min_y + y * pixel_y, iters)


        def $w(width=$width, height=$height, iters=$iters):
            d_image = cuda.device_array((height, width), dtype=np.uint16)
            threads = (16, 16)
            blocks = ((width + 15) // 16, (height + 15) // 16)
            $k[blocks, threads](-2.0, 1.0, -1.0, 1.0, d_image, iters)
            return d_image.copy_to_host()
    ''', dev=dev, k=k, w=w, width=ctx.pick(1024, 1536, 2048), height=ctx.pick(768, 1024), iters=ctx.pick(20, 50, 100)),
                    f'print("mandelbrot mean escape time", float({w}().mean()))')


def nb_montecarlo(ctx: Ctx) -> Piece:
    k = ctx.unique(ctx.pick("pi_kernel", "monte_carlo_pi"))
    w = ctx.unique(ctx.pick("estimate_pi", "gpu_pi"))
    return nb_piece(render('''
        @cuda.jit
        def $k(states, samples, hits):
            tid = cuda.grid(1)
            if tid >= hits.shape[0]:
                return
            inside = 0
            for _ in range(samples):
                x = xoroshiro128p_uniform_float32(states, tid)
                y = xoroshiro128p_uniform_float32(states, tid)
                if x * x + y * y <= 1.0:
                    inside += 1
            hits[tid] = inside


        def $w(threads_total=$total, samples=$samples, seed=1):
            states = create_xoroshiro128p_states(threads_total, seed=seed)
            d_hits = cuda.device_array(threads_total, dtype=np.int32)
            $k[(threads_total + THREADS - 1) // THREADS, THREADS](states, samples, d_hits)
            return 4.0 * d_hits.copy_to_host().sum() / (threads_total * samples)
    ''', k=k, w=w, total=ctx.pick(65536, 262144), samples=ctx.pick(100, 1000)),
                    f'print("pi ~", {w}(), "error", abs({w}() - math.pi))')


def nb_nbody(ctx: Ctx) -> Piece:
    k = ctx.unique(ctx.pick("accelerations", "nbody_forces", "gravity"))
    w = ctx.unique(ctx.pick("nbody_step", "advance_bodies"))
    return nb_piece(render('''
        @cuda.jit
        def $k(pos, acc, softening):
            i = cuda.grid(1)
            if i >= pos.shape[0]:
                return
            ax = 0.0
            ay = 0.0
            az = 0.0
            for j in range(pos.shape[0]):
                dx = pos[j, 0] - pos[i, 0]
                dy = pos[j, 1] - pos[i, 1]
                dz = pos[j, 2] - pos[i, 2]
                inv = 1.0 / math.sqrt(dx * dx + dy * dy + dz * dz + softening * softening)
                inv3 = inv * inv * inv
                ax += dx * inv3
                ay += dy * inv3
                az += dz * inv3
            acc[i, 0] = ax
            acc[i, 1] = ay
            acc[i, 2] = az


        def $w(pos, vel, dt=$dt, steps=$steps, softening=0.01):
            d_pos = cuda.to_device(pos)
            d_acc = cuda.device_array_like(d_pos)
            blocks = (pos.shape[0] + THREADS - 1) // THREADS
            for _ in range(steps):
                $k[blocks, THREADS](d_pos, d_acc, softening)
                acc = d_acc.copy_to_host()
                vel += dt * acc
                pos += dt * vel
                d_pos.copy_to_device(pos)
            return pos, vel
    ''', k=k, w=w, dt=ctx.pick(0.001, 0.01), steps=ctx.pick(10, 50, 100)), render('''
        bodies = rng.standard_normal(($n, 3)).astype(np.float32)
        bodies, velocities = $w(bodies, np.zeros_like(bodies))
        print("centre of mass", bodies.mean(axis=0), "momentum", velocities.sum(axis=0))
    ''', w=w, n=ctx.pick(1024, 4096)))


def nb_blur(ctx: Ctx) -> Piece:
    k = ctx.unique(ctx.pick("box_blur", "blur_kernel", "smooth_image"))
    w = ctx.unique(ctx.pick("blur", "gpu_blur"))
    return nb_piece(render('''
        @cuda.jit
        def $k(src, dst, radius):
            y, x = cuda.grid(2)
            h, w = src.shape
            if y >= h or x >= w:
                return
            total = 0.0
            count = 0
            for dy in range(-radius, radius + 1):
                for dx in range(-radius, radius + 1):
                    yy = min(max(y + dy, 0), h - 1)
                    xx = min(max(x + dx, 0), w - 1)
                    total += src[yy, xx]
                    count += 1
            dst[y, x] = total / count


        def $w(image, radius=$radius, stream=None):
            stream = stream or cuda.stream()
            d_src = cuda.to_device(image, stream=stream)
            d_dst = cuda.device_array_like(d_src, stream=stream)
            blocks = ((image.shape[0] + 15) // 16, (image.shape[1] + 15) // 16)
            $k[blocks, (16, 16), stream](d_src, d_dst, radius)
            out = d_dst.copy_to_host(stream=stream)
            stream.synchronize()
            return out
    ''', k=k, w=w, radius=ctx.pick(1, 2, 3)), render('''
        picture = rng.random((1024, 1024), dtype=np.float32)
        print("blurred std", float($w(picture).std()), "original", float(picture.std()))
    ''', w=w))


def nb_scan(ctx: Ctx) -> Piece:
    k = ctx.unique(ctx.pick("block_scan", "inclusive_scan_block"))
    w = ctx.unique(ctx.pick("prefix_sums", "blockwise_cumsum"))
    return nb_piece(render('''
        @cuda.jit
        def $k(x, out):
            tile = cuda.shared.array(THREADS, dtype=float32)
            tid = cuda.threadIdx.x
            i = cuda.grid(1)
            tile[tid] = x[i] if i < x.shape[0] else 0.0
            cuda.syncthreads()
            offset = 1
            while offset < THREADS:
                value = tile[tid - offset] if tid >= offset else 0.0
                cuda.syncthreads()
                tile[tid] += value
                cuda.syncthreads()
                offset *= 2
            if i < x.shape[0]:
                out[i] = tile[tid]


        def $w(x):
            d_x = cuda.to_device(x)
            d_out = cuda.device_array_like(d_x)
            $k[(x.size + THREADS - 1) // THREADS, THREADS](d_x, d_out)
            return d_out.copy_to_host()
    ''', k=k, w=w), render('''
        ones = np.ones(4 * THREADS, dtype=np.float32)
        print("block scan tail", $w(ones)[THREADS - 1::THREADS])
    ''', w=w))


def nb_events(ctx: Ctx) -> Piece:
    w = ctx.unique(ctx.pick("copy_bandwidth", "transfer_rate"))
    return nb_piece(render('''
        def $w(nbytes=$nbytes, reps=$reps):
            """Host-to-device bandwidth from pinned memory, timed with CUDA events."""
            host = cuda.pinned_array(nbytes, dtype=np.uint8)
            d_buf = cuda.device_array(nbytes, dtype=np.uint8)
            start, stop = cuda.event(), cuda.event()
            start.record()
            for _ in range(reps):
                d_buf.copy_to_device(host)
            stop.record()
            stop.synchronize()
            ms = cuda.event_elapsed_time(start, stop)
            return nbytes * reps / (ms / 1000.0) / 1e9
    ''', w=w, nbytes=ctx.pick("1 << 26", "1 << 28"), reps=ctx.pick(10, 20)),
                    f'print(f"pinned H2D: {{{w}():.1f}} GB/s")')


NUMBA_FUNCS = [nb_saxpy, nb_reduce, nb_matmul, nb_hist, nb_mandelbrot, nb_montecarlo, nb_nbody, nb_blur, nb_scan,
               nb_events]


# =============================================================================== cuda-python


def gen_cudart(ctx: Ctx, target: int) -> tuple[str, str]:
    ctx.cudart_style = ctx.pick("bindings", "bindings", "legacy")
    ctx.const("NBYTES", ctx.pick("1 << 24", "1 << 26", "64 * 1024 * 1024"))
    ctx.const("REPS", ctx.pick(10, 20, 50))
    check = render('''
        def check(err):
            """Raises on a failed cuda-python call; `err` is the first element of what it returned."""
            if isinstance(err, cudart.cudaError_t) and err != cudart.cudaError_t.cudaSuccess:
                _, name = cudart.cudaGetErrorName(err)
                raise RuntimeError(f"CUDA runtime error {int(err)}: {name.decode()}")
    ''')
    H2D = "cudart.cudaMemcpyKind.cudaMemcpyHostToDevice"
    D2H = "cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost"
    roundtrip_leak = ctx.wants("leak")
    roundtrip = render('''
        def roundtrip(host):
            """Copies an array to the device and back, through a second device buffer."""
            nbytes = host.nbytes
            err, d_src = cudart.cudaMalloc(nbytes)
            check(err)
            err, d_dst = cudart.cudaMalloc(nbytes)
            check(err)
            err, = cudart.cudaMemcpy(d_src, host.ctypes.data, nbytes, $H2D)
            check(err)
            err, = cudart.cudaMemcpy(d_dst, d_src, nbytes, cudart.cudaMemcpyKind.cudaMemcpyDeviceToDevice)
            check(err)
            back = np.empty_like(host)
            err, = cudart.cudaMemcpy(back.ctypes.data, d_dst, nbytes, $D2H)
            check(err)
            $free_src
            check(cudart.cudaFree(d_dst)[0])
            return back
    ''', H2D=H2D, D2H=D2H, free_src="" if roundtrip_leak else "check(cudart.cudaFree(d_src)[0])")
    if ctx.wants("alloc_in_loop"):  # GL101: a scratch buffer allocated and freed in every iteration
        sweep_body = render('''
            for size in sizes:
                err, scratch = cudart.cudaMalloc(size)
                check(err)
                err, = cudart.cudaMemset(scratch, 0, size)
                check(err)
                check(cudart.cudaDeviceSynchronize()[0])
                check(cudart.cudaFree(scratch)[0])
                print(f"cleared {size / 2**20:.0f} MiB")
        ''')
    else:
        sweep_body = render('''
            err, scratch = cudart.cudaMalloc(max(sizes))
            check(err)
            for size in sizes:
                err, = cudart.cudaMemset(scratch, 0, size)
                check(err)
                check(cudart.cudaDeviceSynchronize()[0])
                print(f"cleared {size / 2**20:.0f} MiB")
            check(cudart.cudaFree(scratch)[0])
        ''')
    sweep = render('''
        def memset_sweep(sizes):
            """Clears buffers of growing size."""
            $body
    ''', body=sweep_body)
    pieces = [check, roundtrip, sweep]

    def main_code(hooks: list[dict[str, str]]) -> str:
        calls = "\n".join(h["main"] for h in hooks if "main" in h)
        return render('''
            def main():
                err, count = cudart.cudaGetDeviceCount()
                check(err)
                if count == 0:
                    print("no CUDA device")
                    return 1
                check(cudart.cudaSetDevice(0)[0])
                host = np.arange(NBYTES // 4, dtype=np.float32)
                assert np.array_equal(roundtrip(host), host)
                memset_sweep([1 << 20, 1 << 24, NBYTES])
                $calls
                check(cudart.cudaDeviceReset()[0])
                return 0
        ''', calls=calls)

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
    return Piece(render('''
        def $name():
            err, count = cudart.cudaGetDeviceCount()
            check(err)
            for ordinal in range(count):
                err, props = cudart.cudaGetDeviceProperties(ordinal)
                check(err)
                print(f"device {ordinal}: {props.name.decode(errors='replace').rstrip(chr(0))}, "
                      f"{props.totalGlobalMem / 2**30:.1f} GiB, {props.multiProcessorCount} SMs, "
                      f"compute {props.major}.{props.minor}")
            return count
    ''', name=name), hooks={"main": f"{name}()"})


def cr_meminfo(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("memory_info", "free_memory"))
    return Piece(render('''
        def $name(label=""):
            err, free, total = cudart.cudaMemGetInfo()
            check(err)
            print(f"{label}{free / 2**30:.2f} GiB free of {total / 2**30:.2f} GiB")
            return free, total
    ''', name=name), hooks={"main": f'{name}("device memory: ")'})


def cr_bandwidth(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("bandwidth_test", "h2d_bandwidth", "measure_bandwidth"))
    return Piece(render('''
        def $name(nbytes=NBYTES, reps=REPS):
            """Host-to-device bandwidth from pinned memory, timed with events."""
            err, h_pinned = cudart.cudaMallocHost(nbytes)
            check(err)
            err, d_buf = cudart.cudaMalloc(nbytes)
            check(err)
            err, start = cudart.cudaEventCreate()
            check(err)
            err, stop = cudart.cudaEventCreate()
            check(err)
            check(cudart.cudaEventRecord(start, 0)[0])
            for _ in range(reps):
                err, = cudart.cudaMemcpy(d_buf, h_pinned, nbytes, cudart.cudaMemcpyKind.cudaMemcpyHostToDevice)
                check(err)
            check(cudart.cudaEventRecord(stop, 0)[0])
            check(cudart.cudaEventSynchronize(stop)[0])
            err, ms = cudart.cudaEventElapsedTime(start, stop)
            check(err)
            for event in (start, stop):
                check(cudart.cudaEventDestroy(event)[0])
            check(cudart.cudaFree(d_buf)[0])
            check(cudart.cudaFreeHost(h_pinned)[0])
            return nbytes * reps / (ms / 1000.0) / 1e9
    ''', name=name), hooks={"main": f'print(f"H2D {{{name}():.1f}} GB/s")'})


def cr_streams(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("stream_pipeline", "chunked_upload", "overlapped_copies"))
    return Piece(render('''
        def $name(host, chunks=$chunks, streams=$streams):
            """Uploads `host` in chunks, round-robin over several streams, then waits for all of them."""
            nbytes = host.nbytes
            err, d_buf = cudart.cudaMalloc(nbytes)
            check(err)
            handles = []
            for _ in range(streams):
                err, stream = cudart.cudaStreamCreate()
                check(err)
                handles.append(stream)
            step = (nbytes + chunks - 1) // chunks
            base = host.ctypes.data
            for c in range(chunks):
                offset = c * step
                size = min(step, nbytes - offset)
                if size <= 0:
                    break
                err, = cudart.cudaMemcpyAsync(int(d_buf) + offset, base + offset, size,
                                              cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, handles[c % streams])
                check(err)
            for stream in handles:
                check(cudart.cudaStreamSynchronize(stream)[0])
                check(cudart.cudaStreamDestroy(stream)[0])
            check(cudart.cudaFree(d_buf)[0])
            return chunks
    ''', name=name, chunks=ctx.pick(8, 16, 32), streams=ctx.pick(2, 4)),
                 hooks={"main": f"{name}(np.ones(NBYTES // 4, dtype=np.float32))"})


def cr_buffer(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("DeviceBuffer", "CudaBuffer", "GpuAllocation"))
    return Piece(render('''
        class $name:
            """A cudaMalloc'd buffer that frees itself; use it in a `with` block."""

            def __init__(self, nbytes):
                self.nbytes = nbytes
                err, self.ptr = cudart.cudaMalloc(nbytes)
                check(err)

            def upload(self, host):
                assert host.nbytes <= self.nbytes
                err, = cudart.cudaMemcpy(self.ptr, host.ctypes.data, host.nbytes,
                                         cudart.cudaMemcpyKind.cudaMemcpyHostToDevice)
                check(err)

            def download(self, host):
                err, = cudart.cudaMemcpy(host.ctypes.data, self.ptr, host.nbytes,
                                         cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost)
                check(err)
                return host

            def free(self):
                if self.ptr is not None:
                    check(cudart.cudaFree(self.ptr)[0])
                    self.ptr = None

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.free()
                return False
    ''', name=name), hooks={"main": render('''
        with $name(4096) as buf:
            buf.upload(np.arange(1024, dtype=np.float32))
            print("buffer readback", buf.download(np.empty(1024, dtype=np.float32))[:4])
    ''', name=name)})


def cr_memset_verify(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("memset_and_verify", "check_memset"))
    return Piece(render('''
        def $name(count, value=$value):
            nbytes = count
            err, d_ptr = cudart.cudaMalloc(nbytes)
            check(err)
            try:
                err, = cudart.cudaMemset(d_ptr, value, nbytes)
                check(err)
                out = np.empty(count, dtype=np.uint8)
                err, = cudart.cudaMemcpy(out.ctypes.data, d_ptr, nbytes, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost)
                check(err)
            finally:
                check(cudart.cudaFree(d_ptr)[0])
            return bool((out == value).all())
    ''', name=name, value=ctx.pick(0, 7, 255)), hooks={"main": f'print("memset ok:", {name}(1 << 20))'})


def cr_nvrtc(ctx: Ctx) -> Piece:
    ctx.const("SCALE_SOURCE", '''"""\\
extern "C" __global__ void scale(float* x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] *= a;
    }
}
"""''')
    name = ctx.unique(ctx.pick("compile_and_scale", "jit_scale"))
    return Piece(render('''
        def $name(host, factor=$factor, threads=256):
            """Compiles a kernel with NVRTC, launches it with the driver API on a device copy of `host`."""
            err, prog = nvrtc.nvrtcCreateProgram(SCALE_SOURCE.encode(), b"scale.cu", 0, [], [])
            opts = [b"--fmad=true", b"-default-device"]
            err, = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
            if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
                _, size = nvrtc.nvrtcGetProgramLogSize(prog)
                log = b" " * size
                nvrtc.nvrtcGetProgramLog(prog, log)
                raise RuntimeError(log.decode())
            _, size = nvrtc.nvrtcGetPTXSize(prog)
            ptx = b" " * size
            nvrtc.nvrtcGetPTX(prog, ptx)
            err, module = driver.cuModuleLoadData(ptx)
            err, kernel = driver.cuModuleGetFunction(module, b"scale")
            n = host.size
            err, d_x = cudart.cudaMalloc(host.nbytes)
            check(err)
            err, = cudart.cudaMemcpy(d_x, host.ctypes.data, host.nbytes, cudart.cudaMemcpyKind.cudaMemcpyHostToDevice)
            check(err)
            args = ((d_x, factor, n), (ctypes.c_void_p, ctypes.c_float, ctypes.c_int))
            blocks = (n + threads - 1) // threads
            err, = driver.cuLaunchKernel(kernel, blocks, 1, 1, threads, 1, 1, 0, 0, args, 0)
            out = np.empty_like(host)
            err, = cudart.cudaMemcpy(out.ctypes.data, d_x, host.nbytes, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost)
            check(err)
            check(cudart.cudaFree(d_x)[0])
            driver.cuModuleUnload(module)
            return out
    ''', name=name, factor=ctx.pick(2.0, 0.5, 3.0)),
                 hooks={"main": f'print("scaled", {name}(np.ones(4096, dtype=np.float32))[:4])'})


def cr_peer(ctx: Ctx) -> Piece:
    name = ctx.unique(ctx.pick("peer_access_matrix", "p2p_report"))
    return Piece(render('''
        def $name():
            err, count = cudart.cudaGetDeviceCount()
            check(err)
            matrix = np.zeros((count, count), dtype=bool)
            for a in range(count):
                for b in range(count):
                    if a != b:
                        err, ok = cudart.cudaDeviceCanAccessPeer(a, b)
                        check(err)
                        matrix[a, b] = bool(ok)
            return matrix
    ''', name=name), hooks={"main": f'print("peer access\\n", {name}().astype(int))'})


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


# =============================================================================== timing


@dataclass
class Result:
    label: str
    command: str = ""
    seconds: float | None = None
    count: int | None = None  # findings (gpulint) or reported problems (flake8)
    codes: Counter | None = None
    files: int | None = None  # files gpulint analysed (in-process only)
    error: str | None = None
    notes: list[str] = field(default_factory=list)


def time_gpulint_cli(folder: Path, repeat: int) -> Result:
    result = Result("gpulint check (CLI)")
    result.command = "python -m gpulint check DIR --jobs 1 --format json --no-cache -o FILE"
    cmd = [sys.executable, "-m", "gpulint", "check", str(folder), "--jobs", "1", "--format", "json", "--no-cache"]
    best, items, stderr, error = best_json_run(cmd, folder, repeat)
    if error is not None:
        result.error = error
        return result
    result.seconds = best
    result.count = len(items)
    result.codes = Counter(str(f.get("code")) for f in items)
    internal = [line for line in stderr.splitlines() if "internal error" in line]
    if internal:
        result.notes.append(f"{len(internal)} internal errors, e.g. {internal[0].removeprefix('gpulint: ')[:160]}")
    return result


def time_gpulint_in_process(folder: Path, repeat: int) -> Result:
    result = Result("gpulint in-process", command="gpulint.engine.check_paths([DIR], Settings(jobs=1))")
    try:
        sys.path.insert(0, str(REPO))
        from gpulint.config import Settings
        from gpulint.engine import check_paths
    except Exception as exc:
        result.error = f"cannot import gpulint.engine ({type(exc).__name__}: {exc})"
        return result
    settings = Settings(jobs=1)
    best = None
    report = None
    cwd = os.getcwd()
    try:
        os.chdir(folder)  # as the CLI runs: paths are displayed relative to the corpus
        for _ in range(repeat):
            report = None
            gc.collect()
            t0 = time.perf_counter()
            report = check_paths([str(folder)], settings)
            elapsed = time.perf_counter() - t0
            best = elapsed if best is None else min(best, elapsed)
    except Exception as exc:
        result.error = f"check_paths raised {type(exc).__name__}: {exc}"
        return result
    finally:
        os.chdir(cwd)
    result.seconds = best
    result.count = len(report.findings)
    result.codes = Counter(f.code for f in report.findings)
    result.files = report.files
    internal = [d for d in report.diagnostics if "internal error" in d]
    if internal:
        result.notes.append(f"{len(internal)} internal errors, e.g. {internal[0][:160]}")
    return result


def time_flake8(folder: Path, repeat: int) -> Result:
    result = Result("flake8 (CLI)", command="python -m flake8 " + " ".join(FLAKE8_ARGS) + " DIR")
    probe = subprocess.run([sys.executable, "-m", "flake8", "--version"], capture_output=True, text=True)
    if probe.returncode != 0:
        result.error = "flake8 is not installed for this Python (pip install flake8)"
        return result
    version = probe.stdout.strip()
    plugins = re.findall(r"(pyflakes|pycodestyle): ([\d.]+)", version)
    result.notes.append(f"flake8 {version.split()[0]}" + (" (" + ", ".join(f"{n} {v}" for n, v in plugins) + ")"
                                                          if plugins else ""))
    cmd = [sys.executable, "-m", "flake8", *FLAKE8_ARGS, str(folder)]
    env = dict(os.environ)
    env.pop("PYTHONSTARTUP", None)
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - t0
        if proc.returncode not in (0, 1):
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            result.error = f"exit {proc.returncode}: " + (" | ".join(tail) or "no output")
            return result
        best = elapsed if best is None else min(best, elapsed)
    problems = [line for line in proc.stdout.splitlines() if line.strip()]
    result.seconds = best
    result.count = len(problems)
    result.codes = Counter(line.split(": ", 1)[1].split()[0] for line in problems if ": " in line)
    if problems:
        result.notes.append(f"the corpus is not flake8-clean, e.g. {problems[0][:160]}")
    return result


# =============================================================================== report


def prepare_folder(parser: argparse.ArgumentParser, out: Path) -> Path:
    folder = out.resolve()
    if folder.exists() and not folder.is_dir():
        parser.error(f"--out {folder}: exists and is not a folder")
    if folder.exists() and any(folder.iterdir()):
        if any((folder / m).exists() for m in OTHER_MARKERS) and not (folder / MARKER).exists():
            parser.error(f"--out {folder}: holds static_speed.py's CUDA corpus; give another folder")
        if not (folder / MARKER).exists():
            parser.error(f"--out {folder}: the folder exists and was not made by this script; "
                         f"give an empty or new folder")
        for old in folder.glob("*.py"):  # an earlier corpus: replace it
            old.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MARKER).write_text("generated by benchmarks/python_speed.py\n", encoding="utf-8")
    return folder


def codes_text(codes: Counter | None) -> str:
    if not codes:
        return ""
    return ", ".join(f"{c} {n}" for c, n in sorted(codes.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200, help="number of .py files to generate [200]")
    parser.add_argument("--lines-per-file", type=int, default=220, help="average lines per file [220]")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is reported [3]")
    parser.add_argument("--seed", type=int, default=20240601, help="seed of the generator")
    parser.add_argument("--out", type=Path, help="generate into DIR (created; kept) instead of a temporary folder")
    parser.add_argument("--keep", action="store_true", help="keep the generated folder")
    parser.add_argument("--markdown", action="store_true", help="also print a Markdown table for the README")
    parser.add_argument("--pin", type=int, metavar="CPU",
                        help="pin the runs to this CPU (--jobs 1 already keeps both tools on one core; pinning "
                             "only helps on an otherwise idle machine)")
    parser.add_argument("--generate-only", action="store_true", help="write the corpus and stop")
    parser.add_argument("--check-corpus", action="store_true",
                        help="compile every generated file and run flake8 on the corpus, then stop")
    args = parser.parse_args(argv)
    if args.files < 1 or args.lines_per_file < 50 or args.repeat < 1:
        parser.error("--files and --repeat must be >= 1, --lines-per-file >= 50")

    if args.out:
        folder = prepare_folder(parser, args.out)
        keep = True
    else:
        folder = Path(tempfile.mkdtemp(prefix="gpulint-pycorpus-"))
        (folder / MARKER).write_text("generated by benchmarks/python_speed.py\n", encoding="utf-8")
        keep = args.keep
    try:
        t0 = time.perf_counter()
        nfiles, nlines, kinds, wasteful = generate_corpus(folder, args.files, args.lines_per_file, args.seed)
        mix = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
        print(f"generated {nfiles} files, {nlines:,} lines in {folder} ({time.perf_counter() - t0:.1f} s, "
              f"seed {args.seed}): {mix}; {wasteful} files with deliberate waste")
        if args.generate_only:
            keep = True
            return 0
        if args.check_corpus:
            compiled, errors = check_corpus(folder)
            print(f"compile(): {compiled - len(errors)} of {compiled} files compile")
            for e in errors[:10]:
                print(f"  {e}")
            flake = time_flake8(folder, 1)
            if flake.error:
                print(f"flake8: unavailable: {flake.error}")
            else:
                print(f"{flake.command}: {flake.count} problems {codes_text(flake.codes)}")
                for line in flake.notes[1:]:
                    print(f"  {line}")
            return 0
        pinning = "not pinned" if args.pin is None else pin_to_cpu(args.pin)
        print(f"timing with --jobs 1, best of {args.repeat}, {pinning}")
        if hasattr(os, "getloadavg") and os.getloadavg()[0] > 0.5:
            print(f"note: load average {os.getloadavg()[0]:.2f} before timing; figures may be noisy")

        cli = time_gpulint_cli(folder, args.repeat)
        inproc = time_gpulint_in_process(folder, args.repeat)
        flake = time_flake8(folder, args.repeat)
        results = [cli, inproc, flake]
        machine = machine_description()
        date = _dt.date.today().isoformat()

        print()
        print(f"machine: {machine}")
        print(f"date:    {date}")
        print()
        header = f"{'tool':<22} {'files':>6} {'lines':>8} {'seconds':>9} {'lines/s':>10} {'findings':>9}"
        print(header)
        print("-" * len(header))
        for r in results:
            if r.error:
                print(f"{r.label:<22} unavailable: {r.error}")
                continue
            print(f"{r.label:<22} {nfiles:>6} {nlines:>8,} {r.seconds:>9.3f} {fmt_rate(nlines, r.seconds):>10} "
                  f"{r.count:>9}")
            for note in r.notes:
                print(f"{'':<22} note: {note}")
        print()
        for r in results:
            if r.command:
                print(f"{r.label + ':':<22} {r.command}")
        print()
        findings_line = codes_text(cli.codes) or ("none" if cli.codes is not None else "n/a")
        print(f"gpulint findings by code: {findings_line}")
        analysed = inproc.files
        if analysed is not None:
            print(f"files gpulint analysed: {analysed} of {nfiles}")
        if cli.seconds and flake.seconds:
            ratio = f"{cli.seconds / flake.seconds:.2f}"
            print(f"gpulint / flake8 time: {ratio} (CLI; both include interpreter start-up)")
        else:
            ratio = "n/a"
            print("gpulint / flake8 time: n/a (" + ("flake8" if not flake.seconds else "gpulint") + " unavailable)")

        no_frontend = analysed == 0
        if cli.seconds:
            rate = nlines / cli.seconds
            met = "met" if rate >= TARGET_LINES_PER_S else "NOT met"
            if no_frontend:
                met = "not judged: gpulint analysed none of the .py files (no Python frontend yet), so this " \
                      "measures start-up and file discovery only"
            verdict = f"{rate:,.0f} lines/s -> {met}"
            print(f"target:  >= {TARGET_LINES_PER_S:,} lines/s on one core (`gpulint check`, start-up included): "
                  f"{verdict}")
            if inproc.seconds:
                rate_in = nlines / inproc.seconds
                print(f"         in-process (no start-up): {rate_in:,.0f} lines/s -> "
                      f"{'met' if rate_in >= TARGET_LINES_PER_S else 'NOT met'}"
                      + (" (nothing analysed)" if no_frontend else ""))
        else:
            verdict = "not measured (gpulint check failed)"
            print(f"target:  >= {TARGET_LINES_PER_S:,} lines/s on one core: {verdict}")

        if args.markdown:
            print()
            print(f"Python analysis speed, one core (`--jobs 1`), {nfiles} generated Python GPU files, {nlines:,} "
                  f"lines; best of {args.repeat}. {machine}; {date}.")
            print()
            print("| Tool | Files | Lines | Time (s) | Lines/s | Findings |")
            print("|---|---:|---:|---:|---:|---:|")
            names = {"gpulint check (CLI)": "`gpulint check --jobs 1`",
                     "gpulint in-process": "gpulint, in-process (no start-up)",
                     "flake8 (CLI)": "`flake8 --jobs 1` (for scale)"}
            for r in results:
                if r.error:
                    print(f"| {names[r.label]} | {nfiles} | {nlines:,} | unavailable | - | - |")
                else:
                    print(f"| {names[r.label]} | {nfiles} | {nlines:,} | {r.seconds:.2f} | "
                          f"{fmt_rate(nlines, r.seconds)} | {r.count} |")
            print()
            print(f"gpulint / flake8 time: {ratio}. Target >= {TARGET_LINES_PER_S:,} lines/s on one core: "
                  f"{verdict.split(': gpulint')[0]}. Reproduce with `python benchmarks/python_speed.py --markdown`.")
        return 0
    finally:
        if keep:
            print(f"\nkept the generated files in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
