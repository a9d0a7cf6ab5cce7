"""Notebook 12's exercise checkers: the reference solutions pass, realistic wrong answers and the stubs fail.

Each wrong answer is one a learner can write (several were written by a learner read of the notebook);
the checker must refuse it, and its message must name the mistake before it shows any array.
"""

import numpy as np
import pytest
from helpers import copy_of, diagnosis, load_solution

from checkers import ex12
from specdec.batch import attention_mask, draw_rows
from specdec.drawing import draw

mask_solution = load_solution("ex12_attention_mask")
draws_solution = load_solution("ex12_draw_rows")


def stub(*args):
    raise NotImplementedError


# --- exercise 1: the mask ------------------------------------------------------------------------


def causal(past, n, strict=False, own_i=True, past_of=None, end=None):
    """The mask as a learner computes it, with one of the mistakes switched on."""
    past, n = np.asarray(past), np.asarray(n)
    end = int((past + n).max()) if end is None else end
    n_max = int(n.max())
    seen = past if past_of is None else np.full_like(past, past_of(past))
    positions = seen[:, None] + (np.arange(n_max) if own_i else np.zeros(n_max, int))  # (B, n_max)
    keys = np.arange(end)
    return keys < positions[:, :, None] if strict else keys <= positions[:, :, None]


def strict_less(past, n):  # < for <=: a query does not see itself
    return causal(past, n, strict=True)


def forgets_i(past, n):  # every query of a text at past[b]: the later ones do not see the earlier new tokens
    return causal(past, n, own_i=False)


def longest_past(past, n):  # every text given the longest text's past
    return causal(past, n, past_of=np.max)


def end_from_two_maxima(past, n):  # end = max(past) + max(n): one column too many
    past, n = np.asarray(past), np.asarray(n)
    return causal(past, n, end=int(past.max() + n.max()))


def sees_one_key_too_many(past, n):  # <= position + 1: each query sees the next new token of its text
    past, n = np.asarray(past), np.asarray(n)
    return causal(past + 1, n)[:, :, : int((past + n).max())]


def repairs_to_the_argmax(probs, rngs):  # a token of probability 0 replaced by the row's most likely token
    token = searched(probs, np.array([rng.random() for rng in rngs]) * probs.sum(axis=-1), repair=False)
    zero = probs[np.arange(len(probs)), token] == 0
    return np.where(zero, probs.argmax(axis=-1), token).astype(np.int64)


def sees_its_own_future(past, n):  # every new token of a text visible to all its queries
    past, n = np.asarray(past), np.asarray(n)
    mask = causal(past, n)
    for b in range(len(past)):
        mask[b, : n[b], : past[b] + n[b]] = True
    return mask


def padding_sees_nothing(past, n):  # padding queries masked out entirely: their softmax divides 0 by 0
    mask = causal(past, n)
    mask[np.arange(mask.shape[1]) >= np.asarray(n)[:, None]] = False
    return mask


def padding_sees_position_0_only(past, n):  # padding queries given position 0 only: not the reference's rule
    mask = causal(past, n)
    mask[np.arange(mask.shape[1]) >= np.asarray(n)[:, None]] = np.arange(mask.shape[2]) == 0
    return mask


def float_mask(past, n):  # the additive mask (0 and -inf) where the bool one is asked
    return np.where(causal(past, n), 0.0, -np.inf)


def mask_as_list(past, n):
    return causal(past, n).tolist()


def calls_the_package(past, n):
    return attention_mask(np.asarray(past), np.asarray(n))


@pytest.mark.parametrize(
    ("wrong", "words"),
    [
        (strict_less, "must see itself: use <=, not <"),
        (forgets_i, "sees keys 0..past[b] only: query i sits at position past[b] + i"),
        (longest_past, "not another text's length"),
        (sees_one_key_too_many, "every query sees one key too many"),
        (sees_its_own_future, "a later new token of its own text"),
        (end_from_two_maxima, "end = max(past + n)"),
        (padding_sees_nothing, "sees no key at all: its softmax would divide 0 by 0"),
        (padding_sees_position_0_only, "must follow the same rule as the others"),
        (float_mask, "returned float64 as the mask where bool is asked"),
        (mask_as_list, "returned a list where a numpy array is asked"),
        (calls_the_package, "calls attention_mask"),
        (stub, "not attempted yet"),
    ],
)
def test_wrong_masks_are_refused_with_their_mistake_named(wrong, words, capsys):
    assert not ex12.check_attention_mask(wrong)
    message = diagnosis(capsys.readouterr().out)
    assert words in message, message


def test_the_mask_solutions_pass(capsys):
    assert ex12.check_attention_mask(mask_solution.my_attention_mask)
    assert ex12.check_attention_mask(copy_of(attention_mask))
    assert capsys.readouterr().out.count("✓ attention_mask: all") == 2
    assert not ex12.check_attention_mask(attention_mask)  # the package's own function, passed as it is


# --- exercise 2: one token per row, each row with its own generator --------------------------------


def searched(probs, u, clip=True, repair=True):
    """Notebook 02's search for all rows at once from the uniforms u (R,), with one step switched off."""
    token = (np.cumsum(probs, axis=-1) <= u[:, None]).sum(axis=-1)  # (R,)
    if clip:
        token = np.minimum(token, probs.shape[-1] - 1)
    if repair:
        zero = probs[np.arange(len(probs)), np.minimum(token, probs.shape[-1] - 1)] == 0
        last = probs.shape[-1] - 1 - np.argmax(probs[:, ::-1] > 0, axis=-1)
        token = np.where(zero, last, token)
    return token.astype(np.int64)


def one_generator(probs, rngs):  # rngs[0] for every row
    return searched(probs, np.array([rngs[0].random() for _ in rngs]) * probs.sum(axis=-1))


def own_generators(probs, rngs):  # fresh generators of its own: the given ones never used
    return searched(probs, np.random.default_rng(0).random(len(probs)) * probs.sum(axis=-1))


def two_uniforms(probs, rngs):  # a warm-up draw before the real one
    return searched(probs, np.array([(rng.random(), rng.random())[1] for rng in rngs]) * probs.sum(axis=-1))


def reversed_pairs(probs, rngs):  # rows paired with the generators in reverse order
    return searched(probs, np.array([rng.random() for rng in rngs])[::-1] * probs.sum(axis=-1))


def unscaled(probs, rngs):  # u on [0, 1) against running sums that end at the row's total
    return searched(probs, np.array([rng.random() for rng in rngs]))


def no_clip(probs, rngs):
    return searched(probs, np.array([rng.random() for rng in rngs]) * probs.sum(axis=-1), clip=False, repair=False)


def no_repair(probs, rngs):
    return searched(probs, np.array([rng.random() for rng in rngs]) * probs.sum(axis=-1), repair=False)


def side_left(probs, rngs):  # the first running sum >= u minus one: off by one token
    u = np.array([rng.random() for rng in rngs]) * probs.sum(axis=-1)
    return np.maximum((np.cumsum(probs, axis=-1) < u[:, None]).sum(axis=-1) - 1, 0).astype(np.int64)


def int32_tokens(probs, rngs):
    return draws_solution.my_draw_rows(probs, rngs).astype(np.int32)


def calls_draw(probs, rngs):  # draws each row with notebook 02's draw
    return np.array([draw(row, rng) for row, rng in zip(probs, rngs, strict=True)], dtype=np.int64)


def calls_the_package_draws(probs, rngs):
    return draw_rows(probs, rngs)


def normalises_in_place(probs, rngs):  # probs /= total: the caller's rows change
    probs /= probs.sum(axis=-1, keepdims=True)
    return draws_solution.my_draw_rows(probs, rngs)


@pytest.mark.parametrize(
    ("wrong", "words"),
    [
        (one_generator, "rngs[1] was never used: row i must draw from its own generator"),
        (own_generators, "none of the generators in `rngs` was used"),
        (two_uniforms, "was not used for exactly one uniform"),
        (reversed_pairs, "row i must take its uniform from rngs[i], in the rows' order"),
        (unscaled, "scale u by probs[i].sum()"),
        (no_clip, "outside the vocabulary"),
        (no_repair, "of probability 0"),
        (repairs_to_the_argmax, "the step back must go to the last token with mass"),
        (side_left, "the first token whose running sum exceeds u"),
        (int32_tokens, "returned int32 as the tokens where int64 is asked"),
        (calls_draw, "calls draw"),
        (calls_the_package_draws, "calls draw_rows"),
        (normalises_in_place, "changed its input `probs` in place"),
        (stub, "not attempted yet"),
    ],
)
def test_wrong_draws_are_refused_with_their_mistake_named(wrong, words, capsys):
    assert not ex12.check_draw_rows(wrong)
    message = diagnosis(capsys.readouterr().out)
    assert words in message, message


def a_python_loop(probs, rngs):  # one searchsorted per row: slower, the same tokens
    tokens = []
    for row, rng in zip(probs, rngs, strict=True):
        cdf = np.cumsum(row)
        token = min(int(cdf.searchsorted(rng.random() * row.sum(), side="right")), row.size - 1)
        if row[token] == 0:
            token = row.size - 1 - int(np.argmax(row[::-1] > 0))
        tokens.append(token)
    return np.array(tokens, dtype=np.int64)


def test_the_draw_solutions_pass(capsys):
    assert ex12.check_draw_rows(draws_solution.my_draw_rows)
    assert ex12.check_draw_rows(copy_of(draw_rows))
    assert ex12.check_draw_rows(a_python_loop)
    assert capsys.readouterr().out.count("✓ draw_rows: all") == 3
    assert not ex12.check_draw_rows(draw_rows)
