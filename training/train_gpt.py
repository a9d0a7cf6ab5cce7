"""Train the course's target model: a tiny GPT on the Python standard library, in numpy.

The architecture is exactly `specdec.gpt.GPT` (pre-LN transformer, learned positions, tied
embeddings, GELU tanh approximation, layer norm eps 1e-5, causal attention); this file adds
what inference does not need: a batched forward pass over whole sequences that keeps what the
backward pass needs, a hand-written backward pass for every layer, AdamW, a warm-up + cosine
learning-rate schedule and gradient clipping. Everything is float32 (the gradient check in
tests/test_training.py runs the same functions in float64). Each batch is split between this
process and a helper process, one core each (see `loss_and_gradients`).

Run from the repository root (the defaults reproduce specdec/weights/target.npz, see its
MODEL_CARD.md; about 35 minutes on a 2-core CPU):

    python training/train_gpt.py

Shapes in comments: B sequences per batch, T positions, N = B * T, d = d_model, H heads,
D = d / H per head, V = vocabulary size.
"""

import argparse
import math
import multiprocessing
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent.parent
for folder in (ROOT, ROOT / "training"):  # run as a script from anywhere: `specdec` and `corpus` importable
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from corpus import heldout_windows, load_corpus  # noqa: E402

from specdec.gpt import expected_shapes, layer_names  # noqa: E402
from specdec.tokenizer import CharTokenizer  # noqa: E402

EPS = 1e-5  # layer norm, as in specdec.gpt
GELU_C = 0.7978845608028654  # sqrt(2 / pi)
LOG2 = math.log(2.0)


# ----------------------------------------------------------------------------------------------
# Parameters


def init_params(vocab_size: int, context: int, d_model: int, n_layer: int, rng: np.random.Generator) -> dict:
    """GPT-2 style initialisation, named as in specdec.gpt.expected_shapes.

    Matrices ~ normal(0, 0.02), except the two projections that write into the residual
    stream (attn.w_out, mlp.w_out), which get 0.02 / sqrt(2 * n_layer) so the residual
    stream's variance does not grow with depth; biases 0; layer norm gains 1.
    """
    params = {}
    for name, shape in expected_shapes(vocab_size, context, d_model, n_layer).items():
        if name.endswith(".gain"):
            params[name] = np.ones(shape, dtype=np.float32)
        elif len(shape) == 1:
            params[name] = np.zeros(shape, dtype=np.float32)
        else:
            std = 0.02 / math.sqrt(2 * n_layer) if name.endswith("w_out") else 0.02
            params[name] = (rng.standard_normal(shape) * std).astype(np.float32)
    return params


# ----------------------------------------------------------------------------------------------
# Layers: each forward returns its output and a cache; each backward takes the gradient of the
# loss with respect to the output and returns the gradients of the inputs and parameters.


def layer_norm_forward(x, gain, bias):
    """y = (x - mean(x)) / sqrt(var(x) + eps) * gain + bias, over the last axis."""
    centred = x - x.mean(axis=-1, keepdims=True)  # (N, d)
    rstd = 1.0 / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + EPS)  # (N, 1)
    xhat = centred * rstd  # (N, d)
    return xhat * gain + bias, (xhat, rstd, gain)


def layer_norm_backward(dy, cache):
    """With xhat the normalised input and g = dy * gain:
    dx = rstd * (g - mean(g) - xhat * mean(g * xhat)); dgain = sum(dy * xhat); dbias = sum(dy)."""
    xhat, rstd, gain = cache
    g = dy * gain  # (N, d)
    dx = rstd * (g - g.mean(axis=-1, keepdims=True) - xhat * (g * xhat).mean(axis=-1, keepdims=True))  # (N, d)
    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)


def gelu_forward(x):
    """gelu(x) = x/2 * (1 + tanh(c (x + 0.044715 x^3))), c = sqrt(2/pi) (GPT-2's approximation)."""
    t = np.tanh(GELU_C * (x + 0.044715 * x * x * x))  # (N, 4d)
    return 0.5 * x * (1 + t), (x, t)


def gelu_backward(dy, cache):
    """d gelu / dx = (1 + t + x (1 - t^2) c (1 + 3 * 0.044715 x^2)) / 2, with t the tanh from the forward pass."""
    x, t = cache
    slope = GELU_C * (1 + 3 * 0.044715 * x * x)  # (N, 4d) derivative of the tanh's argument
    return dy * 0.5 * (1 + t + x * (1 - t * t) * slope)  # (N, 4d)


def attention_forward(x, w_qkv, b_qkv, w_out, b_out, n_head, batch):
    """Causal multi-head self-attention on x (N, d) holding `batch` sequences of T = N / batch tokens.

    q, k, v = x w_qkv + b_qkv split into heads; for each head, position i mixes the values of
    positions j <= i with weights P_ij = softmax_j(q_i . k_j / sqrt(D)); the heads' outputs
    y_i = sum_j P_ij v_j are concatenated and projected: out = y w_out + b_out.
    (The 1 / sqrt(D) is applied to q, which is T times smaller than the (T, T) scores.)
    """
    n, d = x.shape
    t, dh = n // batch, d // n_head
    qkv = x @ w_qkv + b_qkv  # (N, 3d)
    q, k, v = qkv.reshape(batch, t, 3, n_head, dh).transpose(2, 0, 3, 1, 4)  # 3 x (B, H, T, D)
    q = q * (1.0 / math.sqrt(dh))  # (B, H, T, D) scaled queries
    scores = q @ k.transpose(0, 1, 3, 2)  # (B, H, T, T)
    scores += causal_mask(t, x.dtype)  # -inf where j > i
    scores -= scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores, out=scores)  # (B, H, T, T)
    probs /= probs.sum(axis=-1, keepdims=True)  # rows sum to 1
    y = probs @ v  # (B, H, T, D)
    mixed = y.transpose(0, 2, 1, 3).reshape(n, d)  # (N, d) heads side by side
    return mixed @ w_out + b_out, (x, q, k, v, probs, y, mixed, w_qkv, w_out)


def attention_backward(dout, cache):
    """Backward through the projection, the value mixing, the softmax and the q/k/v projection.

    Softmax: with dP the gradient w.r.t. the attention weights P, the scores get
    dS_ij = P_ij * (dP_ij - sum_j' P_ij' dP_ij'), and since dP_ij = dy_i . v_j the row sum is
    simply dy_i . y_i (no pass over the (T, T) matrix needed). Masked entries have P = 0, so
    they get no gradient.
    """
    x, q, k, v, probs, y, mixed, w_qkv, w_out = cache
    batch, n_head, t, dh = q.shape
    n, d = x.shape
    dw_out, db_out = mixed.T @ dout, dout.sum(axis=0)  # (d, d), (d,)
    dy = (dout @ w_out.T).reshape(batch, t, n_head, dh).transpose(0, 2, 1, 3)  # (B, H, T, D)
    dv = probs.transpose(0, 1, 3, 2) @ dy  # (B, H, T, D)
    dscores = dy @ v.transpose(0, 1, 3, 2)  # (B, H, T, T) dP for now
    dscores -= (dy * y).sum(axis=-1, keepdims=True)  # dP_ij - sum_j' P_ij' dP_ij'
    dscores *= probs  # (B, H, T, T) dS
    dq = (dscores @ k) * (1.0 / math.sqrt(dh))  # (B, H, T, D) through the scaling of q
    dk = dscores.transpose(0, 1, 3, 2) @ q  # (B, H, T, D) q is already scaled
    dqkv = np.stack([dq, dk, dv]).transpose(1, 3, 0, 2, 4).reshape(n, 3 * d)  # (N, 3d)
    return dqkv @ w_qkv.T, x.T @ dqkv, dqkv.sum(axis=0), dw_out, db_out


_MASKS = {}


def causal_mask(t: int, dtype) -> np.ndarray:
    """(T, T) additive mask: 0 where position j <= i may be attended to, -inf where j > i."""
    key = (t, np.dtype(dtype))
    if key not in _MASKS:
        _MASKS[key] = np.triu(np.full((t, t), -np.inf, dtype=dtype), k=1)  # (T, T)
    return _MASKS[key]


# ----------------------------------------------------------------------------------------------
# The model


def forward(params: dict, tokens: np.ndarray, n_head: int, targets: np.ndarray | None = None):
    """Logits (B, T, V) for a batch of token sequences (B, T); with targets (B, T), also the mean
    cross-entropy in nats, -mean(log softmax(logits)[target]), and a cache for `backward`."""
    batch, t = tokens.shape
    n_layer = sum(1 for name in params if name.endswith(".ln1.gain"))
    wte = params["wte"]  # (V, d)
    x = (wte[tokens] + params["wpe"][:t]).reshape(batch * t, -1)  # (N, d)
    caches = []
    for i in range(n_layer):
        g1, b1, w_qkv, b_qkv, w_o, b_o, g2, b2, w_in, b_in, w_out, b_out = (params[name] for name in layer_names(i))
        a, ln1 = layer_norm_forward(x, g1, b1)  # (N, d)
        attended, attn = attention_forward(a, w_qkv, b_qkv, w_o, b_o, n_head, batch)  # (N, d)
        x = x + attended  # (N, d)
        a, ln2 = layer_norm_forward(x, g2, b2)  # (N, d)
        pre = a @ w_in + b_in  # (N, 4d)
        hidden, act = gelu_forward(pre)  # (N, 4d)
        x = x + hidden @ w_out + b_out  # (N, d)
        caches.append((ln1, attn, ln2, a, act, hidden))
    final, lnf = layer_norm_forward(x, params["ln_f.gain"], params["ln_f.bias"])  # (N, d)
    logits = final @ wte.T  # (N, V) tied unembedding
    if targets is None:
        return logits.reshape(batch, t, -1), None, None
    shifted = logits - logits.max(axis=-1, keepdims=True)  # (N, V)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (N, V)
    flat_targets = targets.reshape(-1)  # (N,)
    loss = -log_probs[np.arange(flat_targets.size), flat_targets].mean()
    cache = (tokens, flat_targets, log_probs, final, lnf, caches)
    return logits.reshape(batch, t, -1), float(loss), cache


def backward(params: dict, cache) -> dict:
    """Gradients of the mean cross-entropy with respect to every parameter, by the chain rule.

    Cross-entropy: dlogits = (softmax(logits) - onehot(target)) / N. The tied embedding gets
    two contributions: from the unembedding (dlogits^T final) and from the lookup (the rows of
    dx added into the rows of the tokens that were looked up).
    """
    tokens, targets, log_probs, final, lnf, caches = cache
    n = targets.size
    batch, t = tokens.shape
    grads = {}
    dlogits = np.exp(log_probs)  # (N, V) softmax
    dlogits[np.arange(n), targets] -= 1.0
    dlogits /= n
    dwte = dlogits.T @ final  # (V, d)
    dx, grads["ln_f.gain"], grads["ln_f.bias"] = layer_norm_backward(dlogits @ params["wte"], lnf)  # (N, d)
    for i in reversed(range(len(caches))):
        names = layer_names(i)
        ln1, attn, ln2, a, act, hidden = caches[i]
        w_in, w_out = params[names[8]], params[names[10]]
        # MLP branch: x += gelu(ln2(x) w_in + b_in) w_out + b_out
        grads[names[10]], grads[names[11]] = hidden.T @ dx, dx.sum(axis=0)
        dpre = gelu_backward(dx @ w_out.T, act)  # (N, 4d)
        grads[names[8]], grads[names[9]] = a.T @ dpre, dpre.sum(axis=0)
        da, grads[names[6]], grads[names[7]] = layer_norm_backward(dpre @ w_in.T, ln2)  # (N, d)
        dx = dx + da  # the residual passes dx straight through
        # attention branch: x += attention(ln1(x))
        da, grads[names[2]], grads[names[3]], grads[names[4]], grads[names[5]] = attention_backward(dx, attn)
        da, grads[names[0]], grads[names[1]] = layer_norm_backward(da, ln1)  # (N, d)
        dx = dx + da
    dx = dx.reshape(batch, t, -1)  # (B, T, d)
    grads["wpe"] = np.zeros_like(params["wpe"])
    grads["wpe"][:t] = dx.sum(axis=0)
    np.add.at(dwte, tokens.reshape(-1), dx.reshape(batch * t, -1))  # rows of looked-up tokens
    grads["wte"] = dwte
    return grads


# ----------------------------------------------------------------------------------------------
# Optimisation


class AdamW:
    """Adam with decoupled weight decay (Loshchilov & Hutter), decay on matrices only.

    m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
    and, for 2-D parameters (the embeddings and the weight matrices; not biases or layer norm
    gains), first p -= lr * weight_decay * p.
    """

    def __init__(self, params: dict, betas=(0.9, 0.99), eps: float = 1e-8, weight_decay: float = 0.1):
        self.betas, self.eps, self.weight_decay = betas, eps, weight_decay
        self.m = {name: np.zeros_like(p) for name, p in params.items()}
        self.v = {name: np.zeros_like(p) for name, p in params.items()}
        self.t = 0

    def step(self, params: dict, grads: dict, lr: float) -> None:
        self.t += 1
        b1, b2 = self.betas
        c1, c2 = 1 - b1**self.t, 1 - b2**self.t
        for name, p in params.items():
            g, m, v = grads[name], self.m[name], self.v[name]
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            if p.ndim == 2 and self.weight_decay:
                p *= 1 - lr * self.weight_decay
            p -= (lr / c1) * m / (np.sqrt(v / c2) + self.eps)


def clip_gradients(grads: dict, max_norm: float) -> float:
    """Scale all gradients by min(1, max_norm / ||g||) (one global norm); return ||g|| before."""
    norm = math.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in grads.values()))
    if norm > max_norm:
        for g in grads.values():
            g *= max_norm / norm
    return norm


def learning_rate(step: int, steps: int, peak: float, warmup: int, final_fraction: float = 0.1) -> float:
    """Linear warm-up from 0 to `peak` over `warmup` steps, then a cosine decay to final_fraction * peak."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, steps - warmup))
    return peak * (final_fraction + (1 - final_fraction) * 0.5 * (1 + math.cos(math.pi * progress)))


def sample_batch(stream: np.ndarray, batch: int, context: int, rng: np.random.Generator):
    """`batch` random windows of the training stream: inputs (B, T) and next-token targets (B, T)."""
    starts = rng.integers(0, stream.size - context - 1, size=batch)  # (B,)
    windows = stream[starts[:, None] + np.arange(context + 1)].astype(np.int64)  # (B, T + 1)
    return windows[:, :-1], windows[:, 1:]


def evaluate(params: dict, windows: np.ndarray, n_head: int, batch: int = 16) -> float:
    """Mean cross-entropy in bits per token on held-out windows (W, T + 1): read row[:-1], predict row[1:]."""
    total = 0.0
    for start in range(0, len(windows), batch):
        rows = windows[start : start + batch]  # (b, T + 1)
        _, loss, _ = forward(params, rows[:, :-1], n_head, rows[:, 1:])
        total += loss * rows.shape[0]
    return total / len(windows) / LOG2


# ----------------------------------------------------------------------------------------------
# Two cores: numpy's element-wise work (softmax, GELU, layer norm: about half of a step) runs on one
# core whatever BLAS does, and OpenBLAS gains little on these small products. So the batch is split
# in two: a helper process computes the gradients of the second half while this process computes
# those of the first, each with one BLAS thread, and the two are averaged (the mean over equal halves
# is the mean over the batch). The helper gets the current parameters with every job (3 MB: a few ms).


def gradient_helper(connection, n_head: int, threads: int) -> None:
    """The helper process's loop: receive (params, inputs, targets), send back (loss, gradients); stop on None."""
    with threadpool_limits(limits=threads, user_api="blas"):
        while (job := connection.recv()) is not None:
            params, inputs, targets = job
            _, loss, cache = forward(params, inputs, n_head, targets)
            connection.send((loss, backward(params, cache)))


def loss_and_gradients(params: dict, inputs, targets, n_head: int, helper=None):
    """Mean cross-entropy (nats) and its gradients on a batch, with the second half done by `helper` if given."""
    if helper is None:
        _, loss, cache = forward(params, inputs, n_head, targets)
        return loss, backward(params, cache)
    half = len(inputs) // 2
    helper.send((params, inputs[half:], targets[half:]))
    _, loss, cache = forward(params, inputs[:half], n_head, targets[:half])
    grads = backward(params, cache)
    other_loss, other_grads = helper.recv()
    for name, g in grads.items():
        g += other_grads[name]
        g *= 0.5
    return (loss + other_loss) / 2, grads


# ----------------------------------------------------------------------------------------------
# Saving


def save(params: dict, path: Path, n_head: int, dtype=np.float32) -> None:
    """Write the weights in the format specdec.models.load_model reads: the arrays named as in
    specdec.gpt.expected_shapes (matrices in `dtype`, vectors always float32) and the 0-d
    arrays kind = "gpt", n_head and n_layer. No object arrays, so it loads with allow_pickle=False."""
    n_layer = sum(1 for name in params if name.endswith(".ln1.gain"))
    arrays = {name: p.astype(dtype if p.ndim == 2 else np.float32) for name, p in params.items()}
    arrays.update(kind=np.array("gpt"), n_head=np.array(n_head), n_layer=np.array(n_layer))
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)


def rounded(params: dict, dtype) -> dict:
    """The parameters after a round trip through `dtype` storage (matrices only, as `save` stores them)."""
    return {name: p.astype(dtype).astype(np.float32) if p.ndim == 2 else p for name, p in params.items()}


# ----------------------------------------------------------------------------------------------
# Training


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--n-layer", type=int, default=6)
    parser.add_argument("--n-head", type=int, default=4)
    parser.add_argument("--context", type=int, default=256, help="max_context of the saved model = training T")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=32, help="sequences per step")
    parser.add_argument("--lr", type=float, default=3e-3, help="peak learning rate")
    parser.add_argument("--warmup", type=int, default=200, help="linear warm-up steps")
    parser.add_argument("--final-lr-fraction", type=float, default=0.1, help="cosine decays to this times lr")
    parser.add_argument("--weight-decay", type=float, default=0.1)
    parser.add_argument("--clip", type=float, default=1.0, help="global gradient norm limit")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--eval-every", type=int, default=250, help="steps between held-out evaluations")
    parser.add_argument("--eval-windows", type=int, default=64, help="held-out windows for periodic evaluation")
    parser.add_argument("--final-eval-windows", type=int, default=1024, help="held-out windows for the final figure")
    parser.add_argument("--processes", type=int, default=2, choices=[1, 2], help="1, or 2 to split each batch")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads per process")
    parser.add_argument("--out", type=Path, default=ROOT / "specdec" / "weights" / "target.npz")
    parser.add_argument("--log", type=Path, default=None, help="also append the log to this file")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    log_file = args.log.open("a") if args.log else None

    def log(message: str) -> None:
        print(message, flush=True)
        if log_file:
            print(message, file=log_file, flush=True)

    log(f"command: python training/train_gpt.py {' '.join(sys.argv[1:] if argv is None else argv)}")
    log(f"settings: {vars(args)}")
    corpus = load_corpus()
    log(corpus.summary())
    rng = np.random.default_rng(args.seed)
    params = init_params(CharTokenizer().vocab_size, args.context, args.d_model, args.n_layer, rng)
    log(f"parameters: {sum(p.size for p in params.values()):,}")
    optimizer = AdamW(params, weight_decay=args.weight_decay)
    eval_windows = heldout_windows(corpus.heldout, args.eval_windows, args.context)
    helper, process = None, None
    if args.processes == 2:
        if args.batch % 2:
            raise SystemExit("--processes 2 needs an even --batch")
        helper, other_end = multiprocessing.Pipe()
        process = multiprocessing.Process(
            target=gradient_helper, args=(other_end, args.n_head, args.threads), daemon=True
        )
        process.start()
    started = time.perf_counter()
    with threadpool_limits(limits=args.threads, user_api="blas"):
        for step in range(args.steps):
            inputs, targets = sample_batch(corpus.train, args.batch, args.context, rng)
            loss, grads = loss_and_gradients(params, inputs, targets, args.n_head, helper)
            norm = clip_gradients(grads, args.clip)
            lr = learning_rate(step, args.steps, args.lr, args.warmup, args.final_lr_fraction)
            optimizer.step(params, grads, lr)
            elapsed = time.perf_counter() - started
            if step % 25 == 0 or step == args.steps - 1:
                log(
                    f"step {step:5d}  loss {loss / LOG2:.4f} bits/token  grad norm {norm:7.3f}  lr {lr:.2e}  "
                    f"{elapsed:7.1f} s  ({elapsed / (step + 1):.3f} s/step)"
                )
            if (step + 1) % args.eval_every == 0 and step + 1 < args.steps:
                log(f"step {step + 1:5d}  held-out {evaluate(params, eval_windows, args.n_head):.4f} bits/token")
        train_seconds = time.perf_counter() - started
        if helper is not None:
            helper.send(None)
            process.join()
        log(f"trained {args.steps} steps in {train_seconds:.0f} s ({train_seconds / 60:.1f} min)")

        final_windows = heldout_windows(corpus.heldout, args.final_eval_windows, args.context)
        bits32 = evaluate(params, final_windows, args.n_head)
        bits16 = evaluate(rounded(params, np.float16), final_windows, args.n_head)
    n_tokens = final_windows.shape[0] * args.context
    log(f"held-out ({n_tokens:,} tokens): float32 {bits32:.4f}, after float16 round trip {bits16:.4f} bits/token")
    dtype = np.float16 if abs(bits16 - bits32) <= 0.01 else np.float32
    save(params, args.out, args.n_head, dtype)
    log(f"saved {args.out} with matrices in {np.dtype(dtype).name} ({args.out.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
