"""Solution to notebook 02, exercise 1: inverse-CDF sampling for one row, with u given."""

import numpy as np


def draw_with_u(probs, u) -> int:
    """Return the token i whose interval [F_(i-1), F_i) contains u * total.

    F is the running sum of `probs` and total = F_(V-1) (1 up to rounding: scaling u by it
    keeps a row that sums to 0.9999999999999999 working). The winner's index is the number
    of running sums <= u * total; a zero-probability token owns an empty interval, so it is
    skipped. If rounding still lands past the end, return the last token with mass.
    """
    probs = np.asarray(probs, dtype=np.float64)  # (V,)
    cdf = np.cumsum(probs)  # (V,) right edges of the intervals
    token = int((cdf <= u * cdf[-1]).sum())
    if token >= probs.size or probs[token] == 0:
        token = int(np.flatnonzero(probs > 0)[-1])  # the last token that can be drawn
    return token
