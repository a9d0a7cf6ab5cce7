"""Reference solution for exercise 1 of notebook 12 (which keys each padded query may see).

Try the exercise first: a checker's counterexample teaches more than a finished answer.
"""

import numpy as np


def my_attention_mask(past, n):
    """(B, n_max, end) bool: text b's query i may see key t, for B texts scored in one padded call.

    Text b has past[b] tokens cached and sends n[b] new ones; its query i sits at position past[b] + i
    and sees positions 0..past[b] + i of its own text (<=: a token sees itself). Every text's queries
    are padded to n_max = max(n), its keys to end = max(past + n): the longest text after its new
    tokens. Padding queries follow the same rule (their outputs are dropped; each sees position 0).
    """
    past, n = np.asarray(past), np.asarray(n)  # (B,) each
    end, n_max = int((past + n).max()), int(n.max())
    query_position = past[:, None] + np.arange(n_max)  # (B, n_max) where each query sits in its text
    return np.arange(end) <= query_position[:, :, None]  # (B, n_max, end)
