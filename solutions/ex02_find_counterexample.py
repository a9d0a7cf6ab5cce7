"""Solution to notebook 02, exercise 3: a concrete input on which `buggy_draw` is wrong.

buggy_draw uses np.searchsorted(cdf, u), whose default side="left" returns the first i with
F_i >= u: token i then owns (F_(i-1), F_i] instead of [F_(i-1), F_i). For u strictly inside an
interval that is the same token, so no statistical test will notice. The difference is at the
steps: a zero-probability token has F_(i-1) = F_i, and if u equals that value and nothing before
reaches it, the left search stops on the empty interval. The only such place is u = 0 with a
leading zero-probability token (rng.random() returns 0.0 once in 2**53 draws: rare, not impossible).
buggy_draw also returns V, past the end, when the running sum stops short of u (seven tokens of
1/7 and u = 1 - 2**-53): that is another bug, the missing clip, and not what the exercise asks for.
"""

import numpy as np


def find_counterexample():
    """Return (probs, u) such that buggy_draw(probs, u) picks a token of probability 0."""
    probs = np.array([0.0, 0.5, 0.5])  # token 0 can never be drawn
    u = 0.0  # F_0 = 0 >= 0, so the left search stops at token 0
    return probs, u
