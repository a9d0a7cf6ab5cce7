"""Reference solution for exercise 1 of notebook 09 (optional: the acceptance test, in section 3).

Try the exercise first: a checker's counterexample teaches more than a finished answer.
"""


def accepts(u, p_x, q_x):
    """True iff a drafted token x with target probability p_x and draft probability q_x is kept.

    u is uniform on [0, 1), so P(u < r) = min(1, r): the token is accepted with probability
    min(1, p_x / q_x). The comparison is strict: with p_x = 0 the ratio is 0 and u < 0 never
    holds, even for u = 0.0 (which rng.random() can return), so a token the target forbids is
    never accepted. With p_x >= q_x the ratio is >= 1 > u: always accepted. q_x > 0 because
    x was drawn from q. bool() turns a numpy bool into a Python one (either is fine).
    """
    return bool(u < p_x / q_x)
