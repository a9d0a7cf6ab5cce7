"""Reference solution for the exercise of notebook 11 (the weights of block verification).

Try the exercise first: a checker's counterexample teaches more than a finished answer.
"""

import numpy as np


def my_block_weights(tokens, q, p):
    """(w, h), each a float64 array of shape (gamma + 1,), indexed by the prefix length i = 0..gamma.

    tokens (gamma,): the drafts; q (gamma, V): the rows they were drawn from; p (gamma + 1, V):
    the target's rows at the same positions and one more. The i-th draft, tokens[i - 1], was
    drawn from q[i - 1] and is judged by p[i - 1].

    w_i is how much of the first i drafts the target still wants: w_0 = 1, and each draft
    multiplies in its ratio p(x) / q(x), capped at 1 at every step (a ratio above 1 cannot bank
    credit for the drafts after it). w drops to 0 for good at a draft the target forbids.

    h_i is the probability of keeping the prefix of length i when no longer one is kept. For
    1 <= i < gamma it compares R_i, the weighted residual mass of the next row (the probability
    the target still wants there beyond what the draft offers), with 1 - w_i, the part of the
    prefix the target did not want: h_i = R_i / (R_i + (1 - w_i)). The denominator is 0 only
    when w_i = 1 and the next rows agree (p[i] == q[i]): then the prefix is kept, h_i = 1. Writing
    1 - w_i first makes the denominator R_i itself where w_i = 1, so h_i is exactly 1 there too.
    After the whole block there is no draft row left to compare with: h_gamma = w_gamma.
    h_0 is not a test (the empty prefix is what is left; no uniform is drawn for it) and is set to 1.
    """
    tokens = np.asarray(tokens, dtype=np.int64)  # (gamma,)
    q = np.asarray(q, dtype=np.float64)  # (gamma, V) float64 even for float32 rows; a new array then
    p = np.asarray(p, dtype=np.float64)  # (gamma + 1, V)
    gamma = tokens.size
    w = np.ones(gamma + 1)  # (gamma + 1,) float64
    for i in range(1, gamma + 1):
        x = tokens[i - 1]
        w[i] = min(1.0, w[i - 1] * p[i - 1, x] / q[i - 1, x])  # q[i - 1, x] > 0: x was drawn from q[i - 1]
    h = np.ones(gamma + 1)  # (gamma + 1,) h_0 = 1
    for i in range(1, gamma):
        r = np.maximum(w[i] * p[i] - q[i], 0.0).sum()  # w[i] * p[i] is a new array: p is left as it was
        denominator = r + (1.0 - w[i])  # >= 0; r itself when w[i] = 1
        h[i] = r / denominator if denominator > 0 else 1.0
    h[gamma] = w[gamma]
    return w, h
