"""Reference solution for exercise 2 of notebook 10 (acceptance rate by draft position).

Try the exercise first: a checker's counterexample teaches more than a finished answer.
"""

import numpy as np


def acceptance_per_position(accepted_per_round, drafted_per_round):
    """For each draft position i = 1..gamma: accepted at i / rounds that reached i (NaN where none did).

    A round that drafted g tokens and accepted n of them reached positions 1..min(n + 1, g)
    (all accepted ones and the rejected one, if any) and accepted positions 1..n. gamma is the
    largest g of any round.
    """
    gamma = max(drafted_per_round, default=0)
    reached = np.zeros(gamma)  # (gamma,)
    accepted = np.zeros(gamma)  # (gamma,)
    for n, g in zip(accepted_per_round, drafted_per_round, strict=True):
        reached[: min(n + 1, g)] += 1
        accepted[:n] += 1
    rates = np.full(gamma, np.nan)  # (gamma,)
    np.divide(accepted, reached, out=rates, where=reached > 0)
    return rates
