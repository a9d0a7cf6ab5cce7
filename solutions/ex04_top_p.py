"""Reference solutions for the exercises of notebook 04 (top-p / nucleus).

Try the exercises first: a checker's counterexample teaches more than a finished answer.
"""

import numpy as np

from specdec import softmax


def nucleus_keep(probs, p):
    """Boolean mask of the nucleus of every row: keep token i iff the mass strictly above it is < p.

    Sort each row in descending order; the mass above position j is the exclusive running sum
    (everything before j). It never decreases, so the positions with mass above < p form a
    prefix; its length n is at least 1, because nothing is above the top token. The last kept
    position holds the crossing token, and comparing probabilities with *its* probability
    (rather than keeping the first n positions) also keeps every token tied with it, whatever
    the order of the tokens. All in float64.
    """
    probs = np.asarray(probs, dtype=np.float64)  # (..., V)
    sorted_desc = -np.sort(-probs, axis=-1)  # (..., V) largest first
    running = np.cumsum(sorted_desc, axis=-1)  # (..., V) mass up to and including each position
    mass_above = np.concatenate([np.zeros_like(running[..., :1]), running[..., :-1]], axis=-1)  # (..., V)
    n_keep = (mass_above < p).sum(axis=-1, keepdims=True)  # (..., 1), >= 1
    threshold = np.take_along_axis(sorted_desc, n_keep - 1, axis=-1)  # (..., 1) the crossing token's probability
    return probs >= threshold  # (..., V)


def fixed_nucleus_filter(logits, p=0.9):
    """The seed blog's nucleus_filter with its three bugs fixed (one row of logits), by small edits.

    1. It kept the tokens whose running sum *including themselves* is <= p, so the token that
       crosses p was dropped, and for p below the top probability nothing was kept at all
       (all -inf, then NaN after softmax). The rule is: keep while the mass *above* is < p.
    2. It kept a prefix of an argsort order, so of several tokens tied at the boundary an
       arbitrary subset survived. Dropping only the tokens *less likely* than the crossing
       token fixes that.
    3. Its probabilities had the logits' dtype; in float32 the top probability of
       [0.5, 0.3, 0.2] rounds to 0.50000006 > 0.5. Compute them in float64.
    """
    sorted_indices = np.argsort(logits)[::-1]
    sorted_logits = logits[sorted_indices]
    sorted_probs = softmax(sorted_logits)  # fix 3: float64 probabilities (blog_softmax kept the logits' dtype)
    cum_probs = np.cumsum(sorted_probs)
    mass_above = np.concatenate([[0.0], cum_probs[:-1]])  # fix 1: the mass *above* each position...
    cutoff = np.searchsorted(mass_above, p, side="left")  # ...is < p for the first `cutoff` positions (>= 1)
    mask = np.zeros(logits.size, dtype=bool)
    # fix 2: drop only the tokens less likely than the crossing token (its ties stay)
    mask[sorted_indices] = sorted_probs < sorted_probs[cutoff - 1]
    filtered = logits.copy()
    filtered[mask] = -np.inf
    return filtered
