# Generated from notebooks/11_block_verification.ipynb by tools/export.py: edit the notebook, not this file.
"""Block verification (Sun et al., ICLR 2025): judge the drafted block as a whole, keep the longest prefix it can."""

from dataclasses import dataclass

import numpy as np

from specdec.drawing import draw
from specdec.validation import check_rng, check_round


def block_weights(tokens: np.ndarray, q: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(w, h), each (gamma + 1,): the capped running ratios and the probabilities of stopping at each length.

    w_0 = 1 and w_i = min(1, w_(i-1) * p_i(x_i) / q_i(x_i)): how much of the block's first i drafts the
    target still wants, capped at 1. For a prefix of length i < gamma, R_i = sum_x max(0, w_i p_(i+1)(x)
    - q_(i+1)(x)) is the weighted residual mass after it, and h_i = R_i / (R_i + (1 - w_i)) the chance of
    keeping that prefix when no longer one is kept (1 when R_i = 0 and w_i = 1); h_gamma = w_gamma.
    h_0 is never used (the empty prefix is what is left), and is set to 1.
    """
    gamma = tokens.size
    w = np.ones(gamma + 1)  # (gamma + 1,) w[i]: the weight after i drafts
    for i in range(gamma):  # a scalar loop: gamma multiplications, each capped
        w[i + 1] = min(1.0, w[i] * p[i, tokens[i]] / q[i, tokens[i]])
    residual_mass = np.maximum(w[:gamma, None] * p[:gamma] - q, 0.0).sum(axis=-1)  # (gamma,) R_0 .. R_(gamma-1)
    denominator = residual_mass + (1.0 - w[:gamma])  # (gamma,) >= 0; R_i itself where w_i = 1, so h_i = 1 exactly
    h = np.ones(gamma + 1)  # (gamma + 1,)
    safe = denominator > 0
    h[:gamma] = np.where(safe, residual_mass / np.where(safe, denominator, 1.0), 1.0)
    h[0] = 1.0
    h[gamma] = w[gamma]
    return w, h


def block_keeps(drafts, q, p) -> np.ndarray:
    """P(block verification keeps exactly i drafts), i = 0..gamma: length i passes, every longer one fails."""
    _, h = block_weights(np.asarray(drafts), q, p)  # (gamma + 1,) h[0] = 1: "none passes" ends at 0
    # entry i: the product of (1 - h_j) over j > i, a cumulative product taken from the end; 1 after the last
    fails_after = np.append(np.cumprod((1 - h[1:])[::-1])[::-1], 1.0)  # (gamma + 1,)
    return h * fails_after  # (gamma + 1,)


def block_verify_drawn(tokens: np.ndarray, q: np.ndarray, p: np.ndarray, rng: np.random.Generator):
    """block_verify without the checks (for callers that built q, p and tokens themselves)."""
    gamma = tokens.size
    w, h = block_weights(tokens, q, p)
    eta = rng.random(gamma)  # (gamma,) one uniform per prefix length 1..gamma, as many as token verification
    kept = np.flatnonzero(eta < h[1:])  # (k,) prefix lengths - 1 that pass their own test, strict as in 09
    tau = int(kept[-1]) + 1 if kept.size else 0  # the LONGEST passing prefix is the one kept
    if tau == gamma:  # the whole block: the bonus token from the next target distribution
        last = draw(p[gamma], rng)
    else:  # the weighted residual norm(max(0, w_tau p - q)), not the plain one
        excess = np.maximum(w[tau] * p[tau] - q[tau], 0.0)  # (V,)
        mass = excess.sum()  # 0 at a kept tau needs w_tau = 1 and p = q there (w_tau < 1 gives h_tau = 0),
        # and then length tau + 1 always passes: unreachable in exact arithmetic, a guard against rounding
        last = draw(excess / mass if mass > 0 else p[tau], rng)
    return np.append(tokens[:tau], last).astype(np.int64), tau


def block_verify(draft_tokens, draft_probs, target_probs, rng: np.random.Generator):
    """Verify the drafted block jointly: the output follows the target exactly, and is on average longest.

    Same contract as speculative_verify: draft_tokens (gamma,), draft_probs (gamma, V) the rows q
    they were drawn from, target_probs (gamma + 1, V) the target's rows p. The running weight w_i
    (block_weights) follows the block left to right; each prefix length i passes its own test with
    probability h_i, and the longest passing prefix is kept (none: the empty one). After a kept
    prefix of length tau < gamma, one token is drawn from norm(max(0, w_tau p_(tau+1) - q_(tau+1)));
    after the whole block, a bonus token from p_(gamma+1). Sun et al. (ICLR 2025, arXiv 2403.10444)
    prove the output exact and the expected length the largest any verifier of one drafted path can
    reach, so never below token-level verification's.
    Returns (emitted tokens, int64 of length tau + 1, tau).
    """
    check_rng(rng)
    tokens, q, p = check_round(draft_tokens, draft_probs, target_probs)
    return block_verify_drawn(tokens, q, p, rng)


@dataclass(frozen=True)
class BlockRule:
    """Block verification as a rule for specdec.exact (notebook 09): the law of what block_verify emits.

    Drafts come from q. Given a drafted block, the prefix of length tau is kept with probability
    block_keeps(...)[tau], then one token comes from the bonus row (the whole block kept) or from the
    weighted residual norm(max(0, w_tau p - q)); residual="plain" is the plain-residual mistake of section 2,
    norm(max(0, p - q)) after the right thresholds.
    """

    name: str = "block"
    residual: str = "weighted"

    def draft_law(self, p, q) -> np.ndarray:
        return q

    def verify_law(self, drafts: tuple, q, p) -> dict:
        """{emitted tokens: probability} of verifying the fixed drafts, q (gamma, V) and p (gamma + 1, V)."""
        gamma = len(drafts)
        w, _ = block_weights(np.array(drafts), q, p)
        law = {}
        for tau, stop in enumerate(block_keeps(drafts, q, p)):
            if stop == 0:
                continue
            if tau == gamma:
                added = p[gamma]  # (V,) the bonus
            else:
                excess = np.maximum((w[tau] if self.residual == "weighted" else 1.0) * p[tau] - q[tau], 0.0)  # (V,)
                mass = excess.sum()
                added = excess / mass if mass > 0 else p[tau]  # (V,) as block_verify_drawn
            for y in np.flatnonzero(added).tolist():
                law[drafts[:tau] + (y,)] = law.get(drafts[:tau] + (y,), 0.0) + stop * added[y]
        return law
