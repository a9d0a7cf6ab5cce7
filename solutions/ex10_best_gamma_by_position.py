"""Reference solution for exercise 3 of notebook 10 (choosing gamma from measured acceptance by position).

Try the exercise first: a checker's counterexample teaches more than a finished answer.
"""

import numpy as np


def best_gamma_by_position(acceptance, c, f):
    """The gamma with the highest predicted speedup when draft i is accepted with probability acceptance[i - 1].

    A round of gamma drafts keeps draft j only if drafts 1..j are all accepted, which happens
    with probability a_1 a_2 ... a_j, so E[tokens] = 1 + a_1 + a_1 a_2 + ... + a_1 ... a_gamma
    (one cumulative product). The round costs gamma * c + f(gamma + 1) target steps. The
    candidates are gamma = 1..len(acceptance) whose f(gamma + 1) is known, visited in increasing
    order so that `max` keeps the smallest gamma on a tie.
    """
    reach = np.cumprod(np.asarray(acceptance, dtype=np.float64))  # (L,) P(draft j is kept)
    candidates = [gamma for gamma in range(1, reach.size + 1) if gamma + 1 in f]
    return max(candidates, key=lambda gamma: (1 + reach[:gamma].sum()) / (gamma * c + f[gamma + 1]))
