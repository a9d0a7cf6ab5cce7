# Generated from notebooks/09_exact_speculative_sampling.ipynb by tools/export.py: edit the notebook, not this file.
"""Verifying drafted tokens so that the output follows the target exactly: accept, or resample the residual."""

import numpy as np

from specdec.drawing import check_probs, check_rng, draw
from specdec.validation import as_array


def verify_drawn(tokens: np.ndarray, q: np.ndarray, p: np.ndarray, rng: np.random.Generator):
    """speculative_verify without the checks (for callers that built q, p and tokens themselves)."""
    gamma = tokens.size
    u = rng.random(gamma)  # (gamma,) fresh uniforms, one per drafted position
    n = 0  # the accepted prefix: draft n is accepted iff u_n < p_n(x_n) / q_n(x_n), strict (p = 0 never accepts)
    while n < gamma and u[n] < p[n, tokens[n]] / q[n, tokens[n]]:  # a scalar loop: at most gamma cheap steps
        n += 1
    if n == gamma:  # all accepted: the bonus token comes from the next target distribution
        last = draw(p[n], rng)
    else:  # residual_distribution(p[n], q[n]) without re-checking rows we built ourselves
        excess = np.maximum(p[n] - q[n], 0.0)  # (V,)
        mass = excess.sum()
        last = draw(excess / mass if mass > 0 else p[n], rng)
    return np.append(tokens[:n], last).astype(np.int64), n


def check_round(draft_tokens, draft_probs, target_probs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The checks of a verification round: (tokens int64 (gamma,), q (gamma, V), p (gamma + 1, V)), float64.

    Each message names the argument and what it must be: one row of q per draft, one more row of p,
    integer ids inside the vocabulary, each drafted token possible under the row it was drawn from.
    """
    q = check_probs(draft_probs, "draft_probs")
    p = check_probs(target_probs, "target_probs")
    tokens = as_array(draft_tokens, "draft_tokens")
    if tokens.ndim != 1:
        raise ValueError(f"draft_tokens must be a 1-D array of token ids, got shape {tokens.shape}")
    if tokens.size == 0:
        tokens = tokens.astype(np.int64)  # no drafts (gamma = 0): np.asarray([]) is float64, but nothing is wrong
    if tokens.dtype.kind not in "iu":
        raise TypeError(f"draft_tokens must hold integer token ids, got dtype {tokens.dtype}")
    gamma = tokens.size
    if q.shape[0] != gamma or q.ndim != 2:
        raise ValueError(f"draft_probs must have one row per draft token: shape ({gamma}, V), got {q.shape}")
    if p.shape != (gamma + 1, q.shape[1]):
        raise ValueError(f"target_probs must have shape (gamma + 1, V) = {(gamma + 1, q.shape[1])}, got {p.shape}")
    if gamma and (tokens.min() < 0 or tokens.max() >= q.shape[1]):
        raise ValueError(f"draft_tokens must be in [0, {q.shape[1]}), got {tokens.min()}..{tokens.max()}")
    rows = np.arange(gamma)  # (gamma,)
    q_drafted = q[rows, tokens]  # (gamma,) q_i(x_i)
    if (q_drafted <= 0).any():
        i = int(np.argmax(q_drafted <= 0))
        raise ValueError(
            f"draft token {i} ({tokens[i]}) has probability 0 under draft_probs row {i}: not drawn from it"
        )
    return tokens.astype(np.int64), q, p


def speculative_verify(draft_tokens, draft_probs, target_probs, rng: np.random.Generator):
    """Accept a prefix of the drafted tokens so that the output follows the target exactly.

    draft_tokens (gamma,): the drafted tokens; draft_probs (gamma, V): the distributions q they
    were drawn from; target_probs (gamma + 1, V): the target's distributions p at the same
    positions plus one more. Token i is accepted iff u_i < p_i(x_i) / q_i(x_i) with a fresh
    uniform u_i (so with probability min(1, p/q); p(x) = 0 always rejects). At the first
    rejection one token is drawn from residual_distribution(p_i, q_i) and verification stops;
    if all gamma are accepted, a bonus token is drawn from p_(gamma+1).
    Returns (emitted tokens, int64 of length n_accepted + 1, n_accepted).
    """
    check_rng(rng)
    tokens, q, p = check_round(draft_tokens, draft_probs, target_probs)
    return verify_drawn(tokens, q, p, rng)


def residual_distribution(p, q) -> np.ndarray:
    """norm(max(0, p - q)): where the target wants more than the draft offered.

    If p <= q everywhere (only possible when p == q, since both sum to 1) the residual is all
    zero and is never needed: a rejection then has probability 0. It falls back to p so the
    function always returns a distribution. Rows over leading axes; float64.
    """
    p, q = check_probs(p, "p"), check_probs(q, "q")
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same shape, got {p.shape} and {q.shape}")
    excess = np.maximum(p - q, 0.0)  # (..., V)
    mass = excess.sum(axis=-1, keepdims=True)  # (..., 1)
    return np.where(mass > 0, excess / np.where(mass > 0, mass, 1.0), p)  # (..., V)
