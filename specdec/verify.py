# Generated from notebooks/09_exact_speculative_sampling.ipynb by tools/export.py: edit the notebook, not this file.
"""Verifying drafted tokens so that the output follows the target exactly: accept, or resample the residual."""

import numpy as np

from specdec.drawing import draw
from specdec.validation import check_pair, check_rng, check_round


def residual_distribution(p, q) -> np.ndarray:
    """norm(max(0, p - q)) along the last axis, float64; p itself for a row with p <= q everywhere (no 0 / 0)."""
    p, q = check_pair(p, q)
    excess = np.maximum(p - q, 0.0)  # (..., V)
    mass = excess.sum(axis=-1, keepdims=True)  # (..., 1)
    return np.where(mass > 0, excess / np.where(mass > 0, mass, 1.0), p)  # (..., V)


def verify_drawn(tokens: np.ndarray, q: np.ndarray, p: np.ndarray, rng: np.random.Generator):
    """speculative_verify without the checks (for callers that built q, p and tokens themselves)."""
    gamma = tokens.size
    u, x = rng.random(gamma).tolist(), tokens.tolist()  # fresh uniforms, one per drafted position; the drafts
    n = 0  # the accepted prefix: draft n is accepted iff u_n < p_n(x_n) / q_n(x_n), strict (p = 0 never accepts)
    while n < gamma and u[n] < p[n, x[n]] / q[n, x[n]]:  # a scalar loop (lists: cheaper to index): at most gamma steps
        n += 1
    if n == gamma:  # all accepted: the bonus token comes from the next target distribution
        last = draw(p[n], rng)
    else:  # residual_distribution(p[n], q[n]) without re-checking rows we built ourselves
        excess = np.maximum(p[n] - q[n], 0.0)  # (V,)
        mass = excess.sum()
        last = draw(excess / mass if mass > 0 else p[n], rng)
    emitted = np.empty(n + 1, dtype=np.int64)  # (n + 1,) the accepted drafts, then the last token
    emitted[:n], emitted[n] = tokens[:n], last
    return emitted, n


def speculative_verify(draft_tokens, draft_probs, target_probs, rng: np.random.Generator):
    """Accept a prefix of the drafts so that the output follows the target exactly (notebook 09, section 4).

    draft_tokens (gamma,) from draft_probs (gamma, V), target_probs (gamma + 1, V) -> (emitted int64, n_accepted)."""
    check_rng(rng)
    tokens, q, p = check_round(draft_tokens, draft_probs, target_probs)
    return verify_drawn(tokens, q, p, rng)
