"""Solution to notebook 02, exercise 1: inverse-CDF sampling for one row, with u given."""

import numpy as np


def draw_with_u(probs, u) -> int:
    """Return the token i whose interval [F_(i-1), F_i) contains u * probs.sum().

    F is the running sum of `probs`. Scaling u by the total, as `draw` does, keeps a row that
    sums to 0.9999999999999999 working. The winner's index is the number of running sums
    <= u * total; a zero-probability token owns an empty interval, so it is skipped. But
    np.sum adds in a different order from np.cumsum: for ten 0.1s the total is 1.0 while the
    last running sum is 0.9999999999999999, so u = 1 - 2**-53 lands past the end. Then
    return the last token with mass.
    """
    probs = np.asarray(probs, dtype=np.float64)  # (V,)
    cdf = np.cumsum(probs)  # (V,) right edges of the intervals
    token = int((cdf <= u * probs.sum()).sum())
    if token >= probs.size or probs[token] == 0:
        token = int(np.flatnonzero(probs > 0)[-1])  # the last token that can be drawn
    return token
