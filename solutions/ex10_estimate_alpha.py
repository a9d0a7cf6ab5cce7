"""Reference solution for exercise 1 of notebook 10 (estimating the acceptance rate alpha).

Try the exercise first: a checker's counterexample teaches more than a finished answer.
"""

import math


def estimate_alpha(accepted_per_round, drafted_per_round):
    """The probability that a draft token is accepted, given that the drafts before it were: accepted / tested.

    A round that drafted g tokens and accepted n of them tested every accepted draft and, if
    n < g, the one draft it rejected; the drafts after a rejection were never looked at, so
    they are not evidence either way. Pooled over all rounds (every test counts once), NaN
    when nothing was tested.
    """
    accepted = sum(accepted_per_round)
    rejected = sum(1 for n, g in zip(accepted_per_round, drafted_per_round, strict=True) if n < g)
    tested = accepted + rejected
    return accepted / tested if tested else math.nan
