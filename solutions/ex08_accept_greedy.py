"""Reference solution for exercise 1 of notebook 08 (the greedy acceptance rule, without a loop).

Try the exercise first: a checker's counterexample teaches more than a finished answer.
"""

import numpy as np


def accept_greedy(drafts, target_argmax):
    """(n_accepted, emitted): the drafts up to the first that is not the target's argmax, then the target's token.

    drafts (gamma,) are the draft's tokens; target_argmax (gamma + 1,) the target's choice at each
    position, from the one verification call. Position i compares drafts[i] with target_argmax[i]
    (both are "the token after the sequence and drafts[:i]"). n is the length of the matching
    prefix; the target then adds target_argmax[n]: the correction at the first mismatch, or the
    bonus token when n == gamma.

    The trap: np.argmin(matches) is the first False, but when every draft matches there is no
    False and argmin returns 0, so a fully accepted round would keep nothing. Hence the .all().
    Counting the matches (matches.sum()) is wrong too: a match after a mismatch does not count,
    because the target's choices after a rejected draft were computed from the wrong text.
    """
    drafts = np.asarray(drafts, dtype=np.int64).reshape(-1)  # (gamma,)
    best = np.asarray(target_argmax, dtype=np.int64).reshape(-1)  # (gamma + 1,)
    matches = drafts == best[: drafts.size]  # (gamma,) does each draft equal the target's choice?
    n = drafts.size if matches.all() else int(np.argmin(matches))  # the first mismatch, or gamma
    return n, np.append(drafts[:n], best[n])  # (n + 1,) the accepted drafts and the target's token
