"""Where the target's forward pass spends its time, for n = 1, 2, 5 and 9 new positions in one call.

Speculative decoding pays f(n) = cost(n positions) / cost(1 position) per round, so what matters is
how each part of a layer grows with n. This script times every step of one layer of the bundled
target exactly as `specdec.gpt.GPT.score` runs it (layer norm, the qkv product, attention scores,
mask, softmax, the attention-weighted values, the output projection, the MLP's two products and
GELU; the products through `specdec.gpt.linear`), after a context of 128 tokens, plus the whole
`score` call, with `time_calls`: every step at every n interleaved in shuffled rounds, medians.
(The mask and the softmax work on a copy of the scores, so their figures include one small copy
each.) Then the bare matrix products of the MLP's first weight, (n, d) @ (d, 4d), where a BLAS
switches from a matrix-vector kernel (n = 1) to a matrix-matrix one (n >= 2): the "gemv/gemm
cliff", which differs between BLAS kernels (OpenBLAS's SkylakeX kernels on Intel, its Haswell
kernels on AMD); and the same product as a stack of n matrix-vector products, which `linear` uses
for 2 to STACKED_ROWS rows on the kernels where it measured faster (notebook 06).

    python benchmarks/bench_forward.py            # a few seconds; prints the machine and BLAS first

Every figure is this machine's: run it on another CPU kind to compare (the header names the CPU
and the BLAS kernel). Generation's BLAS setting (`specdec.threads`, one thread by default) is used.
"""

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere: `specdec` importable

from specdec.gpt import STACKED_ROWS, gelu, layer_norm, linear  # noqa: E402
from specdec.models import load_model  # noqa: E402
from specdec.threads import describe_machine, generation_threads  # noqa: E402
from specdec.timing import time_calls  # noqa: E402

N_VALUES = (1, 2, 5, 9)
CONTEXT = 128


def layer_steps(target, state, n: int, rng: np.random.Generator) -> dict:
    """One function per step of layer 0 for n new positions, on realistic inputs (each step's real input)."""
    g1, b1, w_qkv, b_qkv, w_o, b_o, g2, b2, w_in, b_in, w_out, b_out = target.layers[0]
    h, dh, start = target.n_head, target.head_dim, state.length
    end = start + n
    x = target.w["wte"][rng.integers(0, target.vocab_size, n)] + target.w["wpe"][start:end]  # (n, d)
    qkv = layer_norm(x, g1, b1) @ w_qkv + b_qkv  # (n, 3d)
    q = qkv.reshape(n, 3, h, dh).transpose(1, 2, 0, 3)[0]  # (h, n, dh)
    keys, values = state.keys[0, :, :end], state.values[0, :, :end]  # (h, end, dh) each
    scores = q @ keys.transpose(0, 2, 1) / math.sqrt(dh)  # (h, n, end)
    hidden = layer_norm(x, g2, b2) @ w_in + b_in  # (n, 4d)

    def mask():
        s = scores.copy()
        s[:, :, start:] += target.causal[:n, :n]
        return s

    def softmax():
        s = scores - scores.max(axis=-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)
        return s

    attention = softmax()
    return {
        "layer norm": lambda: layer_norm(x, g1, b1),
        "qkv product": lambda: linear(x, w_qkv, b_qkv),
        "scores q.k": lambda: q @ keys.transpose(0, 2, 1),
        "mask": mask if n > 1 else (lambda: None),
        "softmax": softmax,
        "attention @ v": lambda: (attention @ values).transpose(1, 0, 2).reshape(n, -1),
        "output product": lambda: linear(x, w_o, b_o),
        "MLP in product": lambda: linear(x, w_in, b_in),
        "GELU": lambda: gelu(hidden),
        "MLP out product": lambda: linear(hidden, w_out, b_out),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=101)
    args = parser.parse_args()
    print(f"machine: {describe_machine()}")
    target = load_model("target")
    rng = np.random.default_rng(0)
    state = target.start()
    target.score(rng.integers(0, target.vocab_size, CONTEXT), state)
    print(
        f"bundled target: d = {target.d_model}, {target.n_layer} layers, {target.n_head} heads; "
        f"context {CONTEXT}; medians of {args.repeats} interleaved rounds, microseconds"
    )

    def whole_call(n):
        tokens = rng.integers(0, target.vocab_size, n)

        def call():
            target.score(tokens, state)
            state.rollback(CONTEXT)

        return call

    functions = {}
    for n in N_VALUES:
        functions.update({(name, n): fn for name, fn in layer_steps(target, state, n, rng).items()})
        functions[("whole score call", n)] = whole_call(n)
    d = target.d_model
    for n in range(1, 10):  # the bare product at every n, both ways, to see the kernel switch
        x, w = rng.standard_normal((n, d)).astype(np.float32), target.layers[0][8]
        functions[("bare", n)] = lambda x=x, w=w: x @ w
        functions[("stack", n)] = lambda x=x, w=w: x[:, None, :] @ w  # one gemv per row, one numpy call
    with generation_threads():
        times = time_calls(functions, repeats=args.repeats, number=5, rng=rng)

    names = [name for name, n in functions if n == 1 and name not in ("bare", "stack", "whole score call")]
    print(f"\n{'step of one layer':18}" + "".join(f"{f'n={n}':>9}" for n in N_VALUES) + "   growth n=1->9")
    for name in names:
        row = [times[(name, n)] * 1e6 for n in N_VALUES]
        print(f"{name:18}" + "".join(f"{t:9.1f}" for t in row) + f"   {row[-1] - row[0]:+8.1f}")
    steps = [sum(times[(name, n)] for name in names) * 1e6 for n in N_VALUES]
    print(f"{'sum of the steps':18}" + "".join(f"{t:9.1f}" for t in steps) + f"   {steps[-1] - steps[0]:+8.1f}")
    whole = [times[("whole score call", n)] * 1e6 for n in N_VALUES]
    print(f"\n{'whole score call':18}" + "".join(f"{t:9.0f}" for t in whole))
    print(f"{'f(n)':18}" + "".join(f"{t / whole[0]:9.2f}" for t in whole))
    print(
        f"({target.n_layer} layers x the sum of the steps = {target.n_layer * steps[0]:.0f} us at n = 1; "
        "the rest of a call is the embedding, the final layer norm and logits, and Python)"
    )
    bare = [times[("bare", n)] * 1e6 for n in range(1, 10)]
    stack = [times[("stack", n)] * 1e6 for n in range(1, 10)]
    print(f"\n(n, {d}) @ ({d}, {4 * d}) float32, n = 1..9 (us):  " + " ".join(f"{t:.1f}" for t in bare))
    print(f"  n = 2 over n = 1: {bare[1] / bare[0]:.2f}x (above 1: the matrix-matrix kernel costs more than gemv)")
    print("the same as a stack of n gemv (us):            " + " ".join(f"{t:.1f}" for t in stack))
    faster = [n for n in range(2, 10) if stack[n - 1] < bare[n - 1]]
    print(f"  the stack is faster at n = {faster}; the package's linear stacks 2..{STACKED_ROWS} rows here")


if __name__ == "__main__":
    main()
