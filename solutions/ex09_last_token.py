"""Reference solution for exercise 4 of notebook 09 (optional: spot the bug, the token the target adds).

Try the exercise first: a checker's counterexample teaches more than a finished answer.
"""

from specdec import residual_distribution


def last_token(p_rows, q_rows, drafts, n_accepted):
    """The distribution of the token the target adds after `n_accepted` accepted drafts.

    p_rows (gamma + 1, V): the target's distributions at the gamma drafted positions and one
    more; q_rows (gamma, V): the draft's; drafts (gamma,). The blog post's "fall back to the
    last accepted token" adds nothing after a rejection, so the emitted token at that position only
    ever comes from accepted drafts: its law is min(p, q) / alpha, not p. The fix:

    * a rejection at position n_accepted: draw from the residual norm(max(0, p - q)) of that
      position, the mass the target wants and acceptance did not deliver;
    * every draft accepted: the bonus token from the target's row after the last draft,
      p_rows[gamma], computed by the same target call for free.
    """
    gamma = len(drafts)
    if n_accepted == gamma:
        return p_rows[gamma]
    return residual_distribution(p_rows[n_accepted], q_rows[n_accepted])
