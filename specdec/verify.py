# Generated from notebooks/09_exact_speculative_sampling.ipynb by tools/export.py: edit the notebook, not this file.
"""Verifying drafted tokens so that the output follows the target exactly: accept, or resample the residual."""

import numpy as np

from specdec.drawing import draw
from specdec.validation import check_probs, check_rng, check_round


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
