"""Solution to notebook 05, exercise 2: the bug in buggy_top_k_top_p, and the fix.

The bug: the probabilities are computed once, before top-k, and top-p then walks the masses of
the top-k survivors *without renormalising them*. Those masses add up to less than 1, so more
tokens are needed to reach p, and when the survivors' total is below p nothing is cut at all.
Example: probs [0.30, 0.25, 0.25, 0.20], top_k = 3, top_p = 0.35. Renormalised, the survivors
are [0.375, 0.3125, 0.3125], and the top token alone reaches 0.35; un-renormalised, 0.30 < 0.35,
so the tied pair comes in too.

Which order does the buggy code really implement? The mass above a top-k survivor is the same
before and after removing the tokens below it (they are all less likely), so cutting the
un-renormalised masses is top-p on the *full* distribution, intersected with top-k: the
buggy code is "top-p, then top-k", the wrong order of the pipeline, in disguise.

The fix is one line: renormalise after top-k (or, simpler, work on logits as the package does:
set the dropped logits to -inf and let each filter compute its own softmax).
"""

import numpy as np

from specdec import softmax


def fixed_top_k_top_p(logits, top_k, top_p):
    """Top-k then top-p at temperature 1 for one row, with top-p on the renormalised top-k distribution."""
    logits = np.asarray(logits, dtype=np.float64)  # (V,)
    probs = softmax(logits)  # (V,)
    kth = np.sort(logits)[-min(top_k, logits.size)]  # the k-th largest logit
    probs = np.where(logits >= kth, probs, 0.0)  # top-k: zero the rest (ties with the k-th stay)
    probs = probs / probs.sum()  # THE FIX: the distribution over the top-k survivors
    beats = probs[None, :] > probs[:, None]  # (V, V) [i, j]: token j is strictly more likely than token i
    above = (beats * probs[None, :]).sum(axis=1)  # (V,) mass of the tokens more likely than each token
    probs = np.where(above < top_p, probs, 0.0)  # top-p: keep i iff the mass above it is < p
    return probs / probs.sum()
