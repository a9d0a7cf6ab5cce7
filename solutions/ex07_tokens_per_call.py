"""Reference solution for exercise 1 of notebook 07 (tokens per target call).

Try the exercise first: a checker's counterexample teaches more than a finished answer.
"""


def tokens_per_call(alpha, gamma):
    """Expected tokens one round of speculative decoding yields: gamma drafts, each accepted with probability alpha.

    The first attempt, 1 + gamma * alpha, counts every accepted draft, but a round stops at the
    first rejection: the j-th draft is only kept if drafts 1..j are all accepted, which happens
    with probability alpha**j. The target always adds one token (the correction, or the bonus
    token after a fully accepted round). So E = 1 + alpha + alpha**2 + ... + alpha**gamma.
    Summing the terms needs no special case at alpha = 1, where the closed form
    (1 - alpha**(gamma + 1)) / (1 - alpha) would divide 0 by 0.
    """
    total = 1.0  # the target's own token
    for j in range(1, gamma + 1):
        total += alpha**j  # the j-th draft is kept iff the first j are all accepted
    return total
