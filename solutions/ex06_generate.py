"""Solution to notebook 06, exercise 2: the generation loop.

A fresh decoding state belongs to this generation alone. The prompt goes in with one call
(every prompt position is scored at once), and the last row of its logits is the distribution
of the first new token. Then each step draws a token with sample_token (so the same seed gives
the same tokens as specdec.generate) and feeds that one token back, which costs one position.
The last token is never fed back: nothing comes after it. So P prompt tokens and N new ones
cost N model calls (1 for the prompt, N - 1 for the new tokens) and P + N - 1 positions.
"""

from specdec.pipeline import sample_token


def generate_tokens(model, prompt_tokens, max_new_tokens, params, rng):
    """The new token ids: the prompt in one call, then one call per new token but the last."""
    new_tokens = []
    if max_new_tokens == 0:
        return new_tokens
    state = model.start()
    logits = model.score(prompt_tokens, state)[-1]  # (V,) the distribution of the first new token
    while True:
        new_tokens.append(int(sample_token(logits, params, rng)))
        if len(new_tokens) == max_new_tokens:
            return new_tokens
        logits = model.score(new_tokens[-1:], state)[0]  # (V,) one new position
