"""Reference solution for exercise 3 of notebook 08 (spot the bug in a rollback).

The bug: `target_cache.rollback(min(target_cache.length, len(sequence) + n + 1))` keeps one token too many.
After a rejection the target has read the sequence and all gamma drafts; the text goes on with
the n accepted drafts and then the target's own token, the correction. But the target never
*read* the correction: it *chose* it, from the row of the rejected draft's position. At that
position its cache holds the rejected draft. Keeping n + 1 tokens keeps that wrong token, and the
next round then feeds the correction after it, one position too far: from then on the target
predicts from a text that is not the output, and the output leaves plain greedy.

Why it hides: after a fully accepted round the `min` caps the rollback at what the target has
seen (the sequence and every draft, all of them kept), which is right. So a test with a draft
that always agrees with the target passes; it takes a rejection to show the bug.

The fix: keep the sequence and the accepted drafts only, len(sequence) + n, as the draft's line
already does. The correction is the one pending token the target reads first in the next round.
(The same mistake in the draft's line does not change the output, it stops the loop: the draft
keeps the rejected draft, counts the correction as read, and its next catch-up,
sequence[draft_cache.length:], is empty, which `score` refuses. Only a rejection before the last
draft shows it: the last draft is never read, and the min() caps the rollback there. Rolling the
draft back one token too far would only make it re-read that token: under greedy verification the
draft only proposes, and every emitted token is the target's argmax.)
"""

import numpy as np


def fixed_speculative_greedy(target, draft, prompt_tokens, max_new_tokens, gamma):
    """Greedy speculative decoding with both KV caches. The new tokens, as a list."""
    sequence = [int(t) for t in prompt_tokens]
    end = len(sequence) + max_new_tokens
    target_cache, draft_cache = target.start(), draft.start()
    pending = sequence  # what the target has not read yet: the whole prompt in the first round
    while len(sequence) < end:
        g = min(gamma, end - len(sequence) - 1)  # never draft past max_new_tokens
        drafts = []
        if g > 0:
            logits = draft.score(sequence[draft_cache.length :], draft_cache)[-1]  # (V,) catch up, then draft
            for i in range(g):
                drafts.append(int(np.argmax(logits)))
                if i < g - 1:
                    logits = draft.score(drafts[-1:], draft_cache)[0]  # (V,)
        logits = target.score(pending + drafts, target_cache)[-(g + 1) :]  # (g + 1, V) one call
        best = np.argmax(logits, axis=-1)  # (g + 1,) the target's choices
        n = next((i for i in range(g) if drafts[i] != best[i]), g)
        emitted = drafts[:n] + [int(best[n])]
        target_cache.rollback(len(sequence) + n)  # THE FIX: the sequence and the accepted drafts, not the correction
        draft_cache.rollback(min(draft_cache.length, len(sequence) + n))
        sequence += emitted
        pending = emitted[-1:]
    return sequence[end - max_new_tokens :]
