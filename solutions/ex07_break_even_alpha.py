"""Reference solution for exercise 3 of notebook 07 (the break-even acceptance rate).

Try the exercise first: a checker's counterexample teaches more than a finished answer.
"""

from specdec.timing import predicted_speedup


def break_even_alpha(gamma, c, f):
    """The smallest alpha with predicted speedup >= 1 for this gamma; 0.0 if never slower, None if always slower.

    The round's cost gamma * c + f(gamma + 1) does not depend on alpha and E[tokens] grows with
    it, so the speedup grows with alpha: check both ends, then bisect. At alpha = 0 a round
    yields 1 token (plain decoding's), at alpha = 1 it yields gamma + 1.
    """
    if predicted_speedup(0.0, gamma, c, f) >= 1:
        return 0.0  # never slower, even if every draft is rejected
    if predicted_speedup(1.0, gamma, c, f) < 1:
        return None  # slower even if every draft is accepted
    low, high = 0.0, 1.0  # invariant: speedup(low) < 1 <= speedup(high)
    while high - low > 1e-9:
        middle = (low + high) / 2
        if predicted_speedup(middle, gamma, c, f) >= 1:
            high = middle
        else:
            low = middle
    return high
