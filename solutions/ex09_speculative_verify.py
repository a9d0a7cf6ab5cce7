"""Reference solution for exercise 3 of notebook 09 (the block verifier).

Try the exercise first: a checker's counterexample teaches more than a finished answer.
"""

import numpy as np

from specdec import residual_distribution
from specdec.drawing import draw


def my_speculative_verify(draft_tokens, draft_probs, target_probs, rng):
    """Accept a prefix of the drafts so that the emitted tokens follow the target exactly.

    draft_tokens (gamma,): the drafts; draft_probs (gamma, V): the rows q_i they were drawn
    from; target_probs (gamma + 1, V): the target's rows p_i at the same positions and one
    more. Draft i is kept iff a fresh uniform u_i < p_i(x_i) / q_i(x_i): with probability
    min(1, p/q), and never when p_i(x_i) = 0, even for u_i = 0.0 (strict). At the first
    rejection, at i = n, one token from the residual of row n takes the draft's place and the
    round stops: the later drafts were drawn after a token that is no longer in the text. If
    all gamma drafts are kept, the bonus token comes from row gamma, which the target's call
    computed anyway. Returns (emitted tokens, int64 of length n + 1, n).
    """
    tokens = np.asarray(draft_tokens, dtype=np.int64)  # (gamma,)
    q = np.asarray(draft_probs, dtype=np.float64)  # (gamma, V)
    p = np.asarray(target_probs, dtype=np.float64)  # (gamma + 1, V)
    gamma = tokens.size
    n = 0
    while n < gamma and rng.random() < p[n, tokens[n]] / q[n, tokens[n]]:  # one fresh uniform per test
        n += 1
    if n == gamma:
        last = draw(p[gamma], rng)  # every draft accepted: the bonus token
    else:
        last = draw(residual_distribution(p[n], q[n]), rng)  # rejected at n: the residual there
    return np.append(tokens[:n], last).astype(np.int64), n
