"""PromptLookupDraft's window of candidates (specdec/lookup.py): the NEWEST `candidates` earlier matches are compared.

The rule (PromptLookupDraft.continuation): of the earlier places where the text's last min_match tokens
appeared, the `candidates` most recent are examined, newest first; the one whose match extends furthest back
(up to max_match) wins, the newest on a tie, and the draft proposes the token that followed it. Texts below are
built by hand so that the newest and the oldest windows, and the longest match inside and outside the window,
all name different tokens; the expected token is read off the text in each docstring.
"""

import numpy as np
import pytest

from specdec import PromptLookupDraft
from specdec.exact import TableModel

#          0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18
TEXT_A = [7, 1, 2, 3, 8, 1, 2, 4, 9, 1, 2, 5, 0, 1, 2, 6, 9, 1, 2]
#          0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16
TEXT_B = [4, 9, 1, 2, 3, 8, 1, 2, 5, 0, 1, 2, 6, 4, 9, 1, 2]


def proposal(text, candidates: int) -> tuple[int | None, int]:
    """(continuation, the argmax of the last row of log q) after reading `text`, min_match 2, copy weight 1."""
    fallback = TableModel(np.zeros((10, 10)), "flat")
    # all the mass on the copy: the last row of log q is 0 there and -inf elsewhere
    draft = PromptLookupDraft(fallback, min_match=2, max_match=8, copy_weight=1.0, candidates=candidates)
    state = draft.start()
    logits = draft.score(text, state)  # (len(text), 10)
    assert np.isneginf(logits[-1]).sum() == 9
    return draft.continuation(state), int(np.argmax(logits[-1]))


@pytest.mark.parametrize(
    ("candidates", "token"),
    [(1, 6), (2, 5), (3, 5), (4, 5), (8, 5)],
)
def test_the_window_holds_the_newest_matches(candidates, token):
    """TEXT_A ends with "9 1 2"; "1 2" ended earlier at 2, 6, 10, 14 (followed by 3, 4, 5, 6).

    Matches back from each: at 14, "0 1 2" (2 tokens); at 10, "9 1 2" then 4 vs 6 (3 tokens); at 6 and 2,
    2 tokens. One candidate: the newest, 14, so 6 (the oldest, 2, would give 3). Two: 10 and 14, the longer
    at 10, so 5 (the two oldest, 2 and 6, would give 4). Three or more include 10: 5.
    """
    assert proposal(TEXT_A, candidates) == (token, token)


@pytest.mark.parametrize(("candidates", "token"), [(1, 6), (2, 6), (3, 3), (8, 3)])
def test_a_longer_match_older_than_the_window_is_not_used(candidates, token):
    """TEXT_B ends with "4 9 1 2"; "1 2" ended at 3, 7, 11 (followed by 3, 5, 6).

    At 3 the match is "4 9 1 2" (4 tokens, back to the text's start); at 7 and 11, 2 tokens. With one
    or two candidates (11; 7 and 11) the longest is out of the window: the newest on the tie, 11, gives 6
    (the two oldest, 3 and 7, would give 3). With three, position 3 is in: 3.
    """
    assert proposal(TEXT_B, candidates) == (token, token)


def test_on_a_tie_the_newest_match_wins():
    """TEXT_A's first 16 tokens, then 5 1 2: every earlier "1 2" matches 2 tokens only (none follows a 5).

    Preceded by 7, 8, 9, 0 at 2, 6, 10, 14, none of them 5: a four-way tie, the newest (14) wins: 6.
    """
    text = TEXT_A[:16] + [5, 1, 2]
    assert proposal(text, 8) == (6, 6)
    assert proposal(text, 3) == (6, 6)
