"""Solution to notebook 05, exercise 1: the sampling pipeline composed from the filters.

Try the exercise first: a checker's counterexample teaches more than a finished answer.
"""

import numpy as np

from specdec import min_p_filter, softmax, top_k_filter, top_p_filter


def pipeline_probs(logits, params):
    """softmax(min_p(top_p(top_k(x / T)))): the distribution a token is drawn from, slow but obviously right.

    Each filter takes logits and returns logits with -inf outside its kept set, and each one
    computes its own softmax of what it is given: a -inf logit has probability exactly 0, so
    every later filter sees the distribution renormalised over the survivors of the earlier
    ones, which is the rule. Details that matter:
      * temperature 0 is greedy: a one-hot distribution on the first maximum (no division by 0);
      * subtract the row maximum *before* dividing by T: for T near 1e-308, x / T overflows to
        inf (2 / 1e-308) and inf - inf is NaN; (x - max) / T is at most 0, and at worst -inf;
      * top_k None is skipped (top_k_filter refuses None); top_p 1 and min_p 0 keep everything, so
        applying or skipping them gives the same result (skipping saves the work);
      * everything works on (..., V) arrays because the filters and softmax do.
    """
    x = np.asarray(logits, dtype=np.float64)  # (..., V)
    if params.temperature == 0:
        return softmax(x, 0)
    z = (x - x.max(axis=-1, keepdims=True)) / params.temperature  # (..., V) all <= 0
    if params.top_k is not None:
        z = top_k_filter(z, params.top_k)
    if params.top_p < 1:
        z = top_p_filter(z, params.top_p)
    if params.min_p > 0:
        z = min_p_filter(z, params.min_p)
    return softmax(z)
