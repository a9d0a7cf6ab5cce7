"""Reference solution for exercise 2 of notebook 08 (the two cache lengths after a round).

Try the exercise first: a checker's counterexample teaches more than a finished answer.
"""


def cache_lengths(sequence_length, gamma, n_accepted):
    """(target_length, draft_length): the tokens each model has seen after the rollbacks that end a round.

    The round starts with a text of sequence_length tokens that neither model has fully read:
    the target has one pending token, the draft one or two (both, the whole prompt in the first
    round). Each first catches up on them. The draft then scores its first gamma - 1 drafts, not
    the last one (nobody needs the token after it), so it has seen sequence_length + gamma - 1
    tokens; the target scores the pending token and all gamma drafts in its one call:
    sequence_length + gamma tokens.
    Both then keep the sequence and the accepted drafts: sequence_length + n_accepted tokens.
    The draft cannot keep more than it has seen: when every draft was accepted it stays one short,
    and next round it catches up on two tokens (its last draft and the bonus token).
    """
    kept = sequence_length + n_accepted
    return kept, min(kept, sequence_length + gamma - 1)
