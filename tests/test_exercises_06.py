"""Notebook 06's exercise checkers: the reference solutions pass, realistic wrong answers and the stub fail."""

import math

import numpy as np
import pytest
from helpers import load_solution as load

from specdec.exercises import ex06
from specdec.generation import generate
from specdec.pipeline import SamplingParams, sample_token

bits_solution = load("ex06_bits_and_perplexity")
generate_solution = load("ex06_generate")
bigram_solution = load("ex06_bigram")
cache_solution = load("ex06_cached_score")


def stub(*args):
    raise NotImplementedError


# --- Exercise 1: bits_and_perplexity ------------------------------------------------------------


def nats_not_bits(log_probs):  # forgets that log_softmax gives natural logarithms
    nats = -np.mean(log_probs)
    return nats, 2.0**nats


def perplexity_as_exp_of_bits(log_probs):  # right bits, but e ** bits instead of 2 ** bits
    bits = -np.mean(log_probs) / math.log(2)
    return bits, math.exp(bits)


def average_the_probabilities(log_probs):  # -log2 of the mean probability instead of the mean of -log2 p
    mean_prob = np.mean(np.exp(log_probs))
    return -math.log2(mean_prob), 1 / mean_prob


def total_not_mean(log_probs):  # the log-likelihood of the whole text, not per token
    bits = -np.sum(log_probs) / math.log(2)
    return bits, 2.0**bits


def log10_instead_of_log2(log_probs):
    bits = -np.mean(log_probs) / math.log(10)
    return bits, 10.0**bits


def first_row_only(log_probs):  # fine on 1-D input, wrong on a (W, T) batch
    log_probs = np.atleast_1d(np.asarray(log_probs, dtype=np.float64))
    row = log_probs[0] if log_probs.ndim > 1 else log_probs
    bits = -row.mean() / math.log(2)
    return bits, 2.0**bits


def skips_impossible_tokens(log_probs):  # drops -inf "to avoid infinities": hides the model's worst mistakes
    log_probs = np.asarray(log_probs, dtype=np.float64)
    finite = log_probs[np.isfinite(log_probs)]
    bits = -finite.mean() / math.log(2)
    return bits, 2.0**bits


def test_bits_solution_passes():
    assert ex06.check_bits_and_perplexity(bits_solution.bits_and_perplexity)


@pytest.mark.parametrize(
    "wrong",
    [
        stub,
        nats_not_bits,
        perplexity_as_exp_of_bits,
        average_the_probabilities,
        total_not_mean,
        log10_instead_of_log2,
        first_row_only,
        skips_impossible_tokens,
    ],
)
def test_bits_rejects(wrong, capsys):
    assert not ex06.check_bits_and_perplexity(wrong)
    assert "✗" in capsys.readouterr().out


def test_bits_known_values():
    assert bits_solution.bits_and_perplexity(np.log([0.5, 0.25])) == pytest.approx((1.5, 2**1.5))
    assert bits_solution.bits_and_perplexity(np.log(np.full(7, 1 / 98))) == pytest.approx((math.log2(98), 98))


# --- Exercise 2: generate_tokens ---------------------------------------------------------------


def rescores_everything(model, prompt_tokens, max_new_tokens, params, rng):  # no cache: a fresh state per token
    sequence = list(prompt_tokens)
    for _ in range(max_new_tokens):
        logits = model.score(sequence, model.start())[-1]
        sequence.append(int(sample_token(logits, params, rng)))
    return sequence[len(prompt_tokens) :]


def feeds_the_last_token_back(model, prompt_tokens, max_new_tokens, params, rng):  # one call too many
    new, state = [], model.start()
    logits = model.score(prompt_tokens, state)[-1] if max_new_tokens else None
    for _ in range(max_new_tokens):
        new.append(int(sample_token(logits, params, rng)))
        logits = model.score(new[-1:], state)[0]
    return new


def prompt_token_by_token(model, prompt_tokens, max_new_tokens, params, rng):  # right tokens, too many calls
    if max_new_tokens == 0:
        return []
    state = model.start()
    for token in prompt_tokens:
        logits = model.score([token], state)[-1]
    new = []
    while True:
        new.append(int(sample_token(logits, params, rng)))
        if len(new) == max_new_tokens:
            return new
        logits = model.score(new[-1:], state)[0]


def argmax_always(model, prompt_tokens, max_new_tokens, params, rng):  # ignores the sampling settings
    if max_new_tokens == 0:
        return []
    state, new = model.start(), []
    logits = model.score(prompt_tokens, state)[-1]
    while True:
        new.append(int(np.argmax(logits)))
        if len(new) == max_new_tokens:
            return new
        logits = model.score(new[-1:], state)[0]


def plain_softmax_draw(model, prompt_tokens, max_new_tokens, params, rng):  # temperature 1, no filters
    if max_new_tokens == 0:
        return []
    state, new = model.start(), []
    logits = model.score(prompt_tokens, state)[-1]
    while True:
        new.append(int(sample_token(logits, SamplingParams(temperature=1.0), rng or np.random.default_rng(0))))
        if len(new) == max_new_tokens:
            return new
        logits = model.score(new[-1:], state)[0]


def scores_the_prompt_when_nothing_is_asked(model, prompt_tokens, max_new_tokens, params, rng):
    state = model.start()
    logits = model.score(prompt_tokens, state)[-1]
    new = []
    while len(new) < max_new_tokens:
        new.append(int(sample_token(logits, params, rng)))
        if len(new) < max_new_tokens:
            logits = model.score(new[-1:], state)[0]
    return new


def test_generate_solution_passes():
    assert ex06.check_generate_tokens(generate_solution.generate_tokens)


def test_generate_matches_specdec_generate():
    model = ex06.CountingModel()
    params = SamplingParams(temperature=0.8, top_k=4)
    ours = generate_solution.generate_tokens(model, [1, 2], 6, params, np.random.default_rng(9))
    theirs = generate(ex06.CountingModel(), [1, 2], 6, params, np.random.default_rng(9))
    assert ours == theirs.tokens.tolist()
    assert (model.calls, model.positions) == (6, 2 + 6 - 1)


@pytest.mark.parametrize(
    "wrong",
    [
        stub,
        rescores_everything,
        feeds_the_last_token_back,
        prompt_token_by_token,
        argmax_always,
        plain_softmax_draw,
        scores_the_prompt_when_nothing_is_asked,
    ],
)
def test_generate_rejects(wrong, capsys):
    assert not ex06.check_generate_tokens(wrong)


# --- Exercise 3: bigram_probs -------------------------------------------------------------------


def divide_by_occurrences(tokens, vocab_size):  # counts the last token as if it were followed by something
    tokens = np.asarray(tokens, dtype=np.int64)
    counts = np.zeros((vocab_size, vocab_size))
    np.add.at(counts, (tokens[:-1], tokens[1:]), 1)
    occurrences = np.bincount(tokens, minlength=vocab_size)[:, None]
    return (counts + 1) / (occurrences + vocab_size)


def no_smoothing(tokens, vocab_size):  # maximum likelihood: unseen pairs get 0, unseen rows 0 / 0
    tokens = np.asarray(tokens, dtype=np.int64)
    counts = np.zeros((vocab_size, vocab_size))
    np.add.at(counts, (tokens[:-1], tokens[1:]), 1)
    with np.errstate(invalid="ignore"):
        return counts / counts.sum(axis=1, keepdims=True)


def transposed(tokens, vocab_size):  # P[b, a]: normalises over the previous token instead of the next
    return bigram_solution.bigram_probs(tokens, vocab_size).T


def buffered_add(tokens, vocab_size):  # counts[a, b] += 1 with fancy indexing counts a repeated pair once
    tokens = np.asarray(tokens, dtype=np.int64)
    counts = np.zeros((vocab_size, vocab_size))
    counts[tokens[:-1], tokens[1:]] += 1
    return (counts + 1) / (counts + 1).sum(axis=1, keepdims=True)


def plus_one_in_the_denominator(tokens, vocab_size):  # (count + 1) / (total + 1): rows do not sum to 1
    tokens = np.asarray(tokens, dtype=np.int64)
    counts = np.zeros((vocab_size, vocab_size))
    np.add.at(counts, (tokens[:-1], tokens[1:]), 1)
    return (counts + 1) / (counts.sum(axis=1, keepdims=True) + 1)


def wraps_around(tokens, vocab_size):  # np.roll pairs the last token with the first
    tokens = np.asarray(tokens, dtype=np.int64)
    counts = np.zeros((vocab_size, vocab_size))
    np.add.at(counts, (tokens, np.roll(tokens, -1)), 1)
    return (counts + 1) / (counts + 1).sum(axis=1, keepdims=True)


def test_bigram_solution_passes():
    assert ex06.check_bigram_probs(bigram_solution.bigram_probs)


@pytest.mark.parametrize(
    "wrong",
    [stub, divide_by_occurrences, no_smoothing, transposed, buffered_add, plus_one_in_the_denominator, wraps_around],
)
def test_bigram_rejects(wrong, capsys):
    assert not ex06.check_bigram_probs(wrong)
    assert "✗" in capsys.readouterr().out


def test_bigram_rows_are_distributions():
    probs = bigram_solution.bigram_probs([0, 1, 2, 1, 0, 3], 5)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    assert probs[1, 2] == pytest.approx(2 / 7)  # 1 is followed by 2 and 0: (1 + 1) / (2 + 5)


# --- Exercise 4: cached_score -------------------------------------------------------------------


def relative_positions(w, cache, tokens):  # every call starts at position 0: wpe[:n] instead of wpe[start:end]
    tokens = np.asarray(tokens, dtype=np.int64)
    saved = cache["length"]
    shifted = {**w, "wpe": np.roll(w["wpe"], saved, axis=0)}  # makes wpe[start:end] read wpe[0:n]
    return cache_solution.cached_score(shifted, cache, tokens)


def cache_written_after_attention(w, cache, tokens):  # the new keys are not in the cache when attention reads it
    tokens = np.asarray(tokens, dtype=np.int64)
    n, start = tokens.size, cache["length"]
    end = start + n
    x = w["wte"][tokens] + w["wpe"][start:end]
    q, k, v = x @ w["w_q"], x @ w["w_k"], x @ w["w_v"]
    scores = q @ cache["keys"][:end].T / math.sqrt(k.shape[1])  # reads stale or zero rows start..end-1
    if n > 1:
        scores[np.arange(end)[None, :] > np.arange(start, end)[:, None]] = -np.inf
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    mixed = weights @ cache["values"][:end]
    cache["keys"][start:end], cache["values"][start:end] = k, v
    cache["length"] = end
    return (x + mixed @ w["w_o"]) @ w["wte"].T


def length_not_advanced(w, cache, tokens):  # forgets cache["length"] = end: the next call overwrites this one
    length = cache["length"]
    logits = cache_solution.cached_score(w, cache, tokens)
    cache["length"] = length
    return logits


def last_row_only(w, cache, tokens):  # returns the logits for the next token only, shape (1, V)
    return cache_solution.cached_score(w, cache, tokens)[-1:]


def test_cache_solution_passes():
    assert ex06.check_cached_score(cache_solution.cached_score)


@pytest.mark.parametrize(
    "wrong",
    [stub, ex06.buggy_score, relative_positions, cache_written_after_attention, length_not_advanced, last_row_only],
)
def test_cache_rejects(wrong, capsys):
    assert not ex06.check_cached_score(wrong)
    assert "✗" in capsys.readouterr().out


def test_the_buggy_step_is_right_from_an_empty_cache_and_one_token_at_a_time():
    """The claim in the notebook: the bug only shows when several tokens are scored after a prefix."""
    w = ex06.tiny_weights()
    tokens = np.arange(10) % ex06.VOCAB
    reference = ex06.full_recompute(w, tokens)
    cache = ex06.new_cache(w)
    np.testing.assert_allclose(ex06.buggy_score(w, cache, tokens), reference, atol=1e-12)
    cache = ex06.new_cache(w)
    np.testing.assert_allclose(ex06.buggy_score(w, cache, tokens[:4]), reference[:4], atol=1e-12)
    singles = np.concatenate([ex06.buggy_score(w, cache, tokens[i : i + 1]) for i in range(4, 10)])
    np.testing.assert_allclose(singles, reference[4:], atol=1e-12)
    cache = ex06.new_cache(w)
    ex06.buggy_score(w, cache, tokens[:4])
    assert not np.allclose(ex06.buggy_score(w, cache, tokens[4:]), reference[4:])


def test_the_bug_report_names_a_position(capsys):
    ex06.check_cached_score(ex06.buggy_score)
    out = capsys.readouterr().out
    assert "score 3, then score 4" in out and "(position 3)" in out
