"""Reference solution for exercise 2 of notebook 07 (the best number of drafts per round).

Try the exercise first: a checker's counterexample teaches more than a finished answer.
"""

from specdec.timing import predicted_speedup


def best_gamma(alpha, c, f):
    """The gamma with the highest predicted speedup, among those whose verification cost f(gamma + 1) is known.

    A verification call scores gamma + 1 positions, so an entry f[n] prices gamma = n - 1, and
    n = 1 prices nothing (gamma >= 1). Candidates are visited in increasing order and `max`
    keeps the first of equal maxima, so a tie goes to the smaller gamma.
    """
    candidates = sorted(n - 1 for n in f if n >= 2)
    return max(candidates, key=lambda gamma: predicted_speedup(alpha, gamma, c, f))
