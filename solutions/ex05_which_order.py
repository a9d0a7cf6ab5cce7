"""Solution to notebook 05, exercise 3: which order of filters produced a given output?

Run the logits through each candidate order and see which one reproduces the output. Every
filter keeps an upper set of the logits and the temperature never reorders them, so the kept
sets of the three orders are nested prefixes of the same ranking; comparing the kept sets
(probs > 0) is enough, and comparing probabilities as well does no harm.
"""

import numpy as np

from specdec import softmax, top_k_filter, top_p_filter

ORDERS = ("temperature, top-k, top-p", "temperature, top-p, top-k", "top-k, top-p, temperature")


def apply_in_order(logits, params, order):
    """softmax of the logits after the steps of `order` ("temperature, top-k, top-p" etc.)."""
    z = np.asarray(logits, dtype=np.float64)  # (V,)
    for step in order.split(", "):
        if step == "temperature":
            z = z / params.temperature
        elif step == "top-k":
            z = top_k_filter(z, params.top_k)
        else:
            z = top_p_filter(z, params.top_p)
    return softmax(z)


def which_order(logits, params, probs):
    """The entry of ORDERS whose pipeline turns `logits` into `probs` (same kept set, same probabilities)."""
    probs = np.asarray(probs)
    for order in ORDERS:
        candidate = apply_in_order(logits, params, order)
        if np.array_equal(candidate > 0, probs > 0) and np.allclose(candidate, probs, rtol=1e-9, atol=1e-12):
            return order
    return None
