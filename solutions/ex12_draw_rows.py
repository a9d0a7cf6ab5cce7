"""Reference solution for exercise 2 of notebook 12 (one token per row, each row with its own generator).

Try the exercise first: a checker's counterexample teaches more than a finished answer.
"""

import numpy as np


def my_draw_rows(probs, rngs):
    """(R,) int64: row i of probs (R, V) drawn with rngs[i], the token draw(probs[i], rngs[i]) gives.

    One uniform per row from the row's own generator, scaled by the row's total (1 up to rounding);
    then notebook 02's inverse CDF for all rows at once: the number of running sums <= u, clipped to
    V - 1; a token of probability 0 (reached only past the end, by rounding) steps back to the last
    token with mass.
    """
    total = probs.sum(axis=-1)  # (R,)
    u = np.array([rng.random() for rng in rngs]) * total  # (R,) one uniform per row, its own generator
    running = np.cumsum(probs, axis=-1)  # (R, V)
    token = np.minimum((running <= u[:, None]).sum(axis=-1), probs.shape[-1] - 1)  # (R,)
    rows = np.arange(probs.shape[0])
    zero = probs[rows, token] == 0  # (R,)
    last_with_mass = probs.shape[-1] - 1 - np.argmax(probs[:, ::-1] > 0, axis=-1)  # (R,)
    return np.where(zero, last_with_mass, token).astype(np.int64)
