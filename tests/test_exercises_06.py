"""Notebook 06's exercise checkers: the reference solutions pass, realistic wrong answers and the stub fail."""

import math
import re

import numpy as np
import pytest
from helpers import diagnosis
from helpers import load_solution as load

import specdec
from checkers import ex06
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


def exponentiates_first(log_probs):  # log2(exp(ln p)): a probability of e^-800 underflows to 0, and -log2(0) = inf
    with np.errstate(divide="ignore"):
        bits = -np.mean(np.log2(np.exp(np.asarray(log_probs, dtype=np.float64))))
    return bits, 2.0**bits


def multiplies_by_ln2(log_probs):  # nats * ln 2 instead of nats / ln 2
    bits = -np.mean(log_probs) * math.log(2)
    return bits, 2.0**bits


def perplexity_two_to_the_nats(log_probs):  # right bits, but 2 ** (mean of -ln p)
    nats = -np.mean(log_probs)
    return nats / math.log(2), 2.0**nats


def mean_over_the_last_axis(log_probs):  # one figure per row of a (W, T) batch, not one for the whole text
    bits = -np.mean(np.asarray(log_probs, dtype=np.float64), axis=-1) / math.log(2)
    return bits, 2.0**bits


def divides_by_len(log_probs):  # sum / len(...): len is the number of rows of a batch, and a 0-d array has none
    log_probs = np.asarray(log_probs, dtype=np.float64)
    bits = -log_probs.sum() / len(log_probs) / math.log(2)
    return bits, 2.0**bits


def divides_in_place(log_probs):  # the caller's array is turned into bits: its log-probabilities are gone
    log_probs = np.asarray(log_probs, dtype=np.float64)  # no copy when given a float64 array
    log_probs /= -math.log(2)
    bits = float(log_probs.mean())
    return bits, 2.0**bits


def computes_in_float32(log_probs):  # right in float64's range, but 2 ** 577.8 overflows float32
    log_probs = np.asarray(log_probs, dtype=np.float32)
    bits = -log_probs.mean() / np.float32(math.log(2))
    with np.errstate(over="ignore"):
        return bits, np.float32(2.0) ** bits


def keeps_the_float32_dtype(log_probs):  # float32 input stays float32: 2 ** 144.3 overflows float32 to inf
    log_probs = np.asarray(log_probs)
    bits = -log_probs.mean() / math.log(2)  # a Python float keeps a float32 mean in float32 (NumPy 2)
    with np.errstate(over="ignore"):
        return bits, 2.0**bits


def computes_in_float16(log_probs):  # right to about three digits only
    log_probs = np.asarray(log_probs, dtype=np.float16)
    bits = -log_probs.astype(np.float64).mean() / math.log(2)
    return np.float16(bits), 2.0 ** float(np.float16(bits))


def rounds_through_float32(log_probs):  # float32 arithmetic, returned as Python floats: 7 digits only
    bits = float(-np.asarray(log_probs, dtype=np.float32).mean() / math.log(2))
    return bits, 2.0**bits  # 2 ** 577.79938 is 8.608829e+173, not 8.608748e+173


def float32_bits_float64_perplexity(log_probs):  # the bits a float32 scalar, the perplexity computed from them
    bits = -np.asarray(log_probs, dtype=np.float32).mean() / np.float32(math.log(2))
    return bits, 2.0 ** float(bits)


def mean_in_the_input_dtype(log_probs):  # seen in a learner read: a float32 input's mean is taken in float32
    bits = -np.asarray(log_probs).mean() / np.log(2)  # float64 division, but of a float32 mean
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
        exponentiates_first,
        multiplies_by_ln2,
        perplexity_two_to_the_nats,
        mean_over_the_last_axis,
        divides_by_len,
        divides_in_place,
        computes_in_float32,
        keeps_the_float32_dtype,
        computes_in_float16,
        rounds_through_float32,
        float32_bits_float64_perplexity,
        mean_in_the_input_dtype,
    ],
)
def test_bits_rejects(wrong, capsys):
    assert not ex06.check_bits_and_perplexity(wrong)
    assert "✗" in capsys.readouterr().out


def test_bits_messages_name_the_slip(capsys):
    ex06.check_bits_and_perplexity(nats_not_bits)
    assert "in nats: divide by ln 2" in capsys.readouterr().out
    ex06.check_bits_and_perplexity(exponentiates_first)
    assert "-800" in capsys.readouterr().out
    ex06.check_bits_and_perplexity(divides_by_len)
    assert "shape (2, 2)" in capsys.readouterr().out


def test_bits_messages_stay_readable(capsys):
    ex06.check_bits_and_perplexity(computes_in_float32)
    out = capsys.readouterr().out
    assert "float32" in out and "e+173" in out  # the huge perplexity in exponent notation, not 174 digits
    assert not re.search(r"\d{20}", out)
    ex06.check_bits_and_perplexity(divides_in_place)
    assert "changed its input `log_probs` in place" in capsys.readouterr().out


def test_bits_messages_name_the_precision(capsys):
    ex06.check_bits_and_perplexity(keeps_the_float32_dtype)
    out = capsys.readouterr().out
    assert "float32" in out and "overflows" in out and "compute in float64" in out
    ex06.check_bits_and_perplexity(computes_in_float16)
    out = capsys.readouterr().out
    assert "right only to float16 precision" in out and "float64 is asked" in out


@pytest.mark.parametrize("wrong", [rounds_through_float32, float32_bits_float64_perplexity])
def test_bits_float32_arithmetic_is_named_first(wrong, capsys):
    """Seen in a learner read: an answer computed in float32 and returned as Python floats was told "the bits
    are right, but expected perplexity ...", as if 2 ** bits were the slip. The cause comes first now."""
    assert not ex06.check_bits_and_perplexity(wrong)
    message = diagnosis(capsys.readouterr().out)
    assert message.startswith("your function computes in float32 arithmetic"), message
    assert "float32's 7 digits" in message and "compute in float64" in message
    assert "the bits are right" not in message


def test_bits_a_float32_mean_is_named_first(capsys):
    """Seen in a learner read: -np.asarray(x).mean() / np.log(2) averages a float32 input in float32 and passed
    (float32 means of two entries are exact enough). Many float32 entries show it, and the message says why."""
    assert not ex06.check_bits_and_perplexity(mean_in_the_input_dtype)
    message = diagnosis(capsys.readouterr().out)
    assert message.startswith("your function computes in float32 arithmetic"), message
    assert "np.mean of a float32 array averages in float32" in message and "compute in float64" in message
    assert "float32, shape (4096,))" in message  # the input, last


def test_bits_a_mean_per_row_is_named_first(capsys):
    """Seen in a learner read: mean(axis=-1) gave one figure per row, and the message showed arrays only."""
    assert not ex06.check_bits_and_perplexity(mean_over_the_last_axis)
    message = diagnosis(capsys.readouterr().out)
    assert message.startswith("your function returned bits of shape (2,) where one number is asked"), message
    assert "average over every entry" in message


@pytest.mark.parametrize(
    ("wrong", "first_words"),
    [
        (nats_not_bits, "your bits are the mean of -ln p, in nats"),
        (total_not_mean, "your bits are the total over every token"),
        (perplexity_as_exp_of_bits, "your perplexity is e ** bits"),
        (perplexity_two_to_the_nats, "your perplexity is 2 to the nats"),
        (keeps_the_float32_dtype, "your function computes in float32, which overflows"),
        (computes_in_float16, "your function returned float16 bits"),
        (first_row_only, "wrong bits per token"),
    ],
)
def test_bits_messages_say_the_cause_first_and_the_input_last(wrong, first_words, capsys):
    assert not ex06.check_bits_and_perplexity(wrong)
    message = diagnosis(capsys.readouterr().out)
    assert message.startswith(first_words), message
    assert message.rstrip().endswith(")") and "(log_probs " in message, message


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


def stops_at_the_end_token(model, prompt_tokens, max_new_tokens, params, rng):  # END is 0 in the course, not here
    new, state = [], model.start()
    logits = model.score(prompt_tokens, state)[-1] if max_new_tokens else None
    while len(new) < max_new_tokens:
        new.append(int(sample_token(logits, params, rng)))
        if new[-1] == 0 or len(new) == max_new_tokens:
            break
        logits = model.score(new[-1:], state)[0]
    return new


def first_token_from_row_zero(model, prompt_tokens, max_new_tokens, params, rng):  # [0] where [-1] is meant
    if max_new_tokens == 0:
        return []
    state, new = model.start(), []
    logits = model.score(prompt_tokens, state)[0]  # the distribution after the prompt's *first* token
    while True:
        new.append(int(sample_token(logits, params, rng)))
        if len(new) == max_new_tokens:
            return new
        logits = model.score(new[-1:], state)[0]


def delegates_to_generate(model, prompt_tokens, max_new_tokens, params, rng):  # the right tokens, written by generate
    return generate(model, prompt_tokens, max_new_tokens, params, rng).tokens.tolist()


def delegates_to_specdec_generate(model, prompt_tokens, max_new_tokens, params, rng):
    return specdec.generate(model, prompt_tokens, max_new_tokens, params, rng).tokens.tolist()


def a_generator_of_its_own(model, prompt_tokens, max_new_tokens, params, rng):  # ignores rng: seed 0 every time
    return generate_solution.generate_tokens(model, prompt_tokens, max_new_tokens, params, np.random.default_rng(0))


def empty_prompt_test(model, prompt_tokens, max_new_tokens, params, rng):  # `if not prompt_tokens` fails on an array
    if not prompt_tokens:
        raise ValueError("empty prompt")
    return generate_solution.generate_tokens(model, prompt_tokens, max_new_tokens, params, rng)


def float_tokens(model, prompt_tokens, max_new_tokens, params, rng):  # right values, but floats are not token ids
    return [float(t) for t in generate_solution.generate_tokens(model, prompt_tokens, max_new_tokens, params, rng)]


def appends_to_the_callers_prompt(model, prompt_tokens, max_new_tokens, params, rng):  # the caller's list grows
    sequence = prompt_tokens if isinstance(prompt_tokens, list) else list(prompt_tokens)
    n_prompt = len(sequence)
    sequence.extend(generate_solution.generate_tokens(model, list(sequence), max_new_tokens, params, rng))
    return sequence[n_prompt:]


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
        stops_at_the_end_token,
        first_token_from_row_zero,
        delegates_to_generate,
        delegates_to_specdec_generate,
        a_generator_of_its_own,
        empty_prompt_test,
        float_tokens,
        appends_to_the_callers_prompt,
    ],
)
def test_generate_rejects(wrong, capsys):
    assert not ex06.check_generate_tokens(wrong)
    out = capsys.readouterr().out
    assert "✗" in out and " at 0x" not in out  # a counterexample, with no memory address in it


def test_generate_refusal_is_explained_and_undone(capsys):
    assert not ex06.check_generate_tokens(delegates_to_specdec_generate)
    assert "calls generate" in capsys.readouterr().out
    assert specdec.generate is generate  # restored after the check
    assert ex06.check_generate_tokens(generate_solution.generate_tokens)


def test_generate_input_mutation_message(capsys):
    ex06.check_generate_tokens(appends_to_the_callers_prompt)
    assert "changed its input `prompt_tokens` in place" in capsys.readouterr().out


def test_generate_end_token_message(capsys):
    ex06.check_generate_tokens(stops_at_the_end_token)
    message = diagnosis(capsys.readouterr().out)
    assert message.startswith("your tokens stop after token 0") and "no end token" in message
    assert message.rstrip().endswith(")") and "(prompt_tokens " in message


def test_generate_row_zero_of_the_prompts_logits_is_named(capsys):
    """Seen in a learner read: the first token drawn from row 0 of the prompt's logits got only the tokens."""
    assert not ex06.check_generate_tokens(first_token_from_row_zero)
    message = diagnosis(capsys.readouterr().out)
    assert message.startswith("the first new token must come from the last row of the prompt's logits ([-1])")
    assert "row 0 is the distribution after the prompt's first token" in message
    assert message.rstrip().endswith(")") and "(prompt_tokens " in message


def test_generate_call_count_message_comes_first(capsys):
    ex06.check_generate_tokens(prompt_token_by_token)
    message = diagnosis(capsys.readouterr().out)
    assert message.startswith("the right tokens, but") and "model calls where" in message


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


def flat_index_in_the_input_dtype(tokens, vocab_size):  # a * V + b computed in uint8 wraps around
    tokens = np.asarray(tokens)
    keys = tokens[:-1] * vocab_size + tokens[1:]  # uint8 stays uint8 (NumPy 2): 39 * 40 + 39 wraps
    counts = np.bincount(keys.astype(np.int64), minlength=vocab_size * vocab_size).reshape(vocab_size, vocab_size)
    return (counts + 1) / (counts + 1).sum(axis=1, keepdims=True)


def normalises_columns(tokens, vocab_size):  # divides by the column totals: P(previous | next), not P(next | previous)
    tokens = np.asarray(tokens, dtype=np.int64)
    counts = np.zeros((vocab_size, vocab_size))
    np.add.at(counts, (tokens[:-1], tokens[1:]), 1)
    return (counts + 1) / (counts + 1).sum(axis=0, keepdims=True)


def float32_table(tokens, vocab_size):  # the right table, in float32
    return bigram_solution.bigram_probs(tokens, vocab_size).astype(np.float32)


def vocabulary_from_the_data(tokens, vocab_size):  # V = the largest id + 1: misses ids that never occur
    tokens = np.asarray(tokens, dtype=np.int64)
    return bigram_solution.bigram_probs(tokens, int(tokens.max()) + 1)


def forgets_to_return(tokens, vocab_size):
    bigram_solution.bigram_probs(tokens, vocab_size)


def test_bigram_solution_passes():
    assert ex06.check_bigram_probs(bigram_solution.bigram_probs)


@pytest.mark.parametrize(
    "wrong",
    [
        stub,
        divide_by_occurrences,
        no_smoothing,
        transposed,
        buffered_add,
        plus_one_in_the_denominator,
        wraps_around,
        flat_index_in_the_input_dtype,
        normalises_columns,
        float32_table,
        vocabulary_from_the_data,
        forgets_to_return,
    ],
)
def test_bigram_rejects(wrong, capsys):
    assert not ex06.check_bigram_probs(wrong)
    assert "✗" in capsys.readouterr().out


def test_bigram_messages_say_dtype_in_words(capsys):
    ex06.check_bigram_probs(float32_table)
    assert "returned float32 probabilities where float64 is asked" in capsys.readouterr().out
    ex06.check_bigram_probs(flat_index_in_the_input_dtype)
    out = capsys.readouterr().out
    assert "(uint8)" in out
    assert "right for the same tokens as int64" in out and "tokens[:-1] * vocab_size overflows uint8" in out
    assert "convert the tokens to int64 first" in out


@pytest.mark.parametrize(
    ("wrong", "first_words", "words"),
    [
        (  # seen in a learner read: the mistake the hint names, told only "a wrong probability"
            buffered_add,
            "a pair that occurs more than once was counted once",
            "fancy-indexed += adds 1 per distinct index; use np.add.at or np.bincount",
        ),
        (transposed, "your table is transposed: row a is the token before", "P(next b | previous a)"),
        (normalises_columns, "your columns sum to 1, not your rows", "axis=1"),
        (
            divide_by_occurrences,
            "row 1 of your table sums to 0.8, not 1",
            "token 1 is the last token: its row counts only tokens that have a follower, tokens[:-1]",
        ),
    ],
)
def test_bigram_messages_name_the_slip_first(wrong, first_words, words, capsys):
    assert not ex06.check_bigram_probs(wrong)
    message = diagnosis(capsys.readouterr().out)
    assert message.startswith(first_words), message
    assert words in message
    assert message.rstrip().endswith(")") and "(tokens " in message


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


def fixed_step(name, mask):
    """The solution's step with the causal mask replaced: mask(n, start, end) -> (n, end) True where forbidden."""

    def step(w, cache, tokens):
        tokens = np.asarray(tokens, dtype=np.int64)
        n, start = tokens.size, cache["length"]
        end = start + n
        x = w["wte"][tokens] + w["wpe"][start:end]
        q, k, v = x @ w["w_q"], x @ w["w_k"], x @ w["w_v"]
        cache["keys"][start:end], cache["values"][start:end] = k, v
        scores = q @ cache["keys"][:end].T / math.sqrt(k.shape[1])
        forbidden = mask(n, start, end)
        if forbidden is not None:
            scores[forbidden] = -np.inf
        with np.errstate(invalid="ignore"):  # a row of -inf only: NaN, as a learner's run would give
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
        weights /= weights.sum(axis=1, keepdims=True)
        cache["length"] = end
        return (x + weights @ cache["values"][:end] @ w["w_o"]) @ w["wte"].T

    step.__name__ = name
    return step


# a position may see itself: >= forbids it, and a first position with nothing else to see gets NaN
masks_its_own_position = fixed_step(
    "masks_its_own_position", lambda n, start, end: np.arange(end)[None, :] >= np.arange(start, end)[:, None]
)
no_mask_at_all = fixed_step(
    "no_mask_at_all", lambda n, start, end: None
)  # "the mask was the bug": every token sees the future
# np.arange(start, end) without [:, None]: (1, end) against (n,) does not broadcast (a crash, reported)
rows_not_a_column = fixed_step(
    "rows_not_a_column", lambda n, start, end: np.arange(end)[None, :] > np.arange(start, end)
)
# shifts the columns instead of the rows: an (n, n) mask for an (n, end) block
columns_shifted = fixed_step(
    "columns_shifted", lambda n, start, end: np.arange(start, end)[None, :] > np.arange(n)[:, None]
)


def recomputes_from_scratch(w, cache, tokens):  # keeps the tokens and calls the checker's reference: no cache at all
    seen = cache.setdefault("tokens", [])
    del seen[cache["length"] :]
    seen.extend(int(t) for t in tokens)
    cache_solution.cached_score(w, dict(cache), tokens)  # fills keys and values, as a cache should
    cache["length"] = len(seen)
    return ex06.full_recompute(w, seen)[-len(tokens) :]


def keeps_the_new_keys_out_of_the_cache(w, cache, tokens):  # right logits now, but the next call reads zeros
    tokens = np.asarray(tokens, dtype=np.int64)
    n, start = tokens.size, cache["length"]
    end = start + n
    x = w["wte"][tokens] + w["wpe"][start:end]
    q, k, v = x @ w["w_q"], x @ w["w_k"], x @ w["w_v"]
    keys = np.concatenate([cache["keys"][:start], k])
    values = np.concatenate([cache["values"][:start], v])
    scores = q @ keys.T / math.sqrt(k.shape[1])
    scores[np.arange(end)[None, :] > np.arange(start, end)[:, None]] = -np.inf
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    cache["length"] = end
    return (x + weights @ values @ w["w_o"]) @ w["wte"].T


def float32_logits(w, cache, tokens):  # the right step, rounded to float32
    return cache_solution.cached_score(w, cache, tokens).astype(np.float32)


def test_cache_solution_passes():
    assert ex06.check_cached_score(cache_solution.cached_score)


@pytest.mark.parametrize(
    "wrong",
    [
        stub,
        ex06.buggy_score,
        relative_positions,
        cache_written_after_attention,
        length_not_advanced,
        last_row_only,
        masks_its_own_position,
        no_mask_at_all,
        rows_not_a_column,
        columns_shifted,
        recomputes_from_scratch,
        keeps_the_new_keys_out_of_the_cache,
        float32_logits,
    ],
)
def test_cache_rejects(wrong, capsys):
    assert not ex06.check_cached_score(wrong)
    out = capsys.readouterr().out
    assert "✗" in out and "'wte'" not in out and len(out) < 600  # a counterexample, not a dump of the weights


def test_cache_messages(capsys):
    ex06.check_cached_score(masks_its_own_position)
    assert "NaN" in capsys.readouterr().out
    ex06.check_cached_score(recomputes_from_scratch)
    assert "calls full_recompute" in capsys.readouterr().out
    assert ex06.full_recompute.__name__ == "full_recompute"  # restored after the check
    ex06.check_cached_score(keeps_the_new_keys_out_of_the_cache)
    assert "cache['keys'][0]" in capsys.readouterr().out
    ex06.check_cached_score(float32_logits)
    assert "float32 logits" in capsys.readouterr().out


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
    assert diagnosis(out).startswith("row 0 (position 3) differs from a full recompute")
