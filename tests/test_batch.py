"""Many texts at once (specdec/batch.py, notebook 12): one call for many texts, each row exact and its own.

The evidence:

1. `score_batch` on the bundled GPT gives each row the logits `score` gives it alone, to float32 rounding,
   for ragged rows (different lengths, different numbers of new tokens, a slot of the span not scored),
   after per-row rollbacks and after `pack_rows` moved rows down; a single row and any other model
   (n-gram, table models) are scored row by row, bit for bit;
2. `generate_batch` and `speculative_generate_batch` write, row by row, the texts `generate` and
   `speculative_generate` write alone with the same generators: greedy and sampled, token and block
   verification, fixed and "auto" gamma, rows that stop at an end token while the others go on;
3. exact per row: chi-square tests of each row's first three tokens (every position and every pair of
   positions at once) against the target's exact law after that row's prompt, and of two rows with the
   same prompt for independence, on table models whose laws are known; the same tests reject rows seeded
   alike (the pair test) and a neighbour's rejection imposed on a row (the row's own test);
4. `draw_rows` draws what `draw` draws row by row; the cost model's arithmetic on hand-made runs; every
   argument checked with a message that names it.
"""

import gc
import weakref

import numpy as np
import pytest
from test_speculative import DRAFT_LOGITS, SETTINGS, TARGET_LOGITS, V, tables

import specdec
from specdec import SamplingParams, generate, speculative_generate
from specdec import batch as batch_module
from specdec.batch import (
    BatchCache,
    BatchResult,
    RowCache,
    TargetCall,
    attention_mask,
    batch_speedup,
    call_cost,
    draw_rows,
    generate_batch,
    invariant_score_batch,
    pack_rows,
    predicted_seconds,
    priced_call,
    score_batch,
    speculative_generate_batch,
    start_rows,
    time_batch,
)
from specdec.drawing import chi_square_test, draw
from specdec.exact import TableModel, bigram, target_law
from specdec.generation import GenerationResult
from specdec.pipeline import sampling_probs
from specdec.speculative import SpeculativeResult
from specdec.verify import residual_distribution

ALPHA = 1e-3  # exact code must not be rejected at this level (fixed seeds: a deterministic verdict)
REJECT = 1e-6  # a mistake must be rejected at this level by the very same test
GREEDY = SamplingParams(0.0)
FLOAT32 = 1e-4  # batched and one-text logits agree to float32 rounding (observed: about 1e-5 at most)


@pytest.fixture(scope="module")
def target():
    return specdec.load_model("target")


@pytest.fixture(scope="module")
def draft():
    return specdec.load_model("draft")


@pytest.fixture(scope="module")
def prompts(target):
    rng = np.random.default_rng(30)
    tokenizer = specdec.load_tokenizer()
    text = tokenizer.encode("def f(x):\n    return x + 1\n\nclass Point:\n    def __init__(self, x, y):\n")
    return [text[: int(rng.integers(8, len(text)))] for _ in range(6)]  # six prompts of different lengths


# --- 1. one call for many texts ------------------------------------------------------------------


def test_score_batch_gives_each_row_its_own_logits_for_ragged_rows(target):
    rng = np.random.default_rng(1)
    rows, alone = start_rows(target, 4), [target.start() for _ in range(4)]
    assert all(isinstance(row, RowCache) for row in rows) and rows[0].batch is rows[3].batch
    lengths = [40, 7, 23, 1]
    texts = [rng.integers(0, target.vocab_size, n).tolist() for n in lengths]
    together = score_batch(target, texts, rows)
    apart = [target.score(text, cache) for text, cache in zip(texts, alone, strict=True)]
    for a, b, n in zip(together, apart, lengths, strict=True):
        assert a.shape == (n, target.vocab_size)
        assert np.abs(a - b).max() < FLOAT32
    for row, cache, keep in zip(rows, alone, (31, 7, 2, 0), strict=True):  # each rolls back on its own
        row.rollback(keep)
        cache.rollback(keep)
    more = [[3, 4, 5], [6], [7, 8], [9, 10, 11, 12]]  # ragged: padded to 4 queries
    together = score_batch(target, more, rows)
    apart = [target.score(tokens, cache) for tokens, cache in zip(more, alone, strict=True)]
    assert max(np.abs(a - b).max() for a, b in zip(together, apart, strict=True)) < FLOAT32
    assert [row.length for row in rows] == [34, 8, 4, 4]


def test_score_batch_scores_a_subset_of_rows_and_a_span_with_gaps(target):
    rows, alone = start_rows(target, 5), [target.start() for _ in range(5)]
    texts = [[1 + i, 2, 3 + i, 4] * (i + 1) for i in range(5)]
    score_batch(target, texts, rows)
    for text, cache in zip(texts, alone, strict=True):
        target.score(text, cache)
    chosen = [4, 0, 2]  # not in slot order, slots 1 and 3 left out of the call
    tokens = [[5, 6], [7], [8, 9, 10]]
    together = score_batch(target, tokens, [rows[i] for i in chosen])
    apart = [target.score(t, alone[i]) for t, i in zip(tokens, chosen, strict=True)]
    assert max(np.abs(a - b).max() for a, b in zip(together, apart, strict=True)) < FLOAT32
    assert [row.length for row in rows] == [5, 8, 15, 16, 22]


def test_pack_rows_moves_rows_down_and_keeps_their_keys(target):
    rows, alone = start_rows(target, 4), [target.start() for _ in range(4)]
    texts = [[1, 2, 3], [4, 5, 6, 7, 8], [9, 10], [11, 12, 13, 14]]
    score_batch(target, texts, rows)
    for text, cache in zip(texts, alone, strict=True):
        target.score(text, cache)
    going = [rows[1], rows[3]]  # rows 0 and 2 finished
    pack_rows(going)
    assert [row.slot for row in going] == [0, 1]
    together = score_batch(target, [[20], [21]], going)  # now a dense span of two slots
    apart = [target.score([20], alone[1]), target.score([21], alone[3])]
    assert max(np.abs(a - b).max() for a, b in zip(together, apart, strict=True)) < FLOAT32
    pack_rows(going)  # already packed: nothing moves
    assert [row.slot for row in going] == [0, 1]


def test_pack_rows_moves_a_single_row_down_too(target):
    """The row left alone in slot 2 moves to slot 0, keys and all: slot 1 is the next newcomer's."""
    rows, alone = start_rows(target, 3), target.start()
    score_batch(target, [[1, 2], [3], [4, 5, 6]], rows)
    target.score([4, 5, 6], alone)
    pack_rows([rows[2]])
    assert rows[2].slot == 0
    assert np.array_equal(score_batch(target, [[7]], [rows[2]])[0], target.score([7], alone))


def test_one_row_and_other_models_are_scored_row_by_row_bit_for_bit(target, draft):
    row = start_rows(target, 3)[1]
    cache = target.start()
    assert np.array_equal(score_batch(target, [[5, 6, 7]], [row])[0], target.score([5, 6, 7], cache))
    table = TableModel(TARGET_LOGITS)
    for model in (draft, table):
        states, alone = start_rows(model, 3), [model.start() for _ in range(3)]
        assert not isinstance(states[0], RowCache)
        texts = [[1, 2, 3], [4], [0, 1]]
        for a, b in zip(
            score_batch(model, texts, states),
            [model.score(t, s) for t, s in zip(texts, alone, strict=True)],
            strict=True,
        ):
            assert np.array_equal(a, b)


def test_the_attention_mask_is_causal_per_text():
    mask = attention_mask(np.array([5, 2, 0]), np.array([1, 2, 0]))
    assert mask.shape == (3, 2, 6) and mask.dtype == bool
    assert mask[0, 0].tolist() == [True] * 6  # position 5 sees 0..5
    assert mask[1, 0].tolist() == [True, True, True, False, False, False]  # position 2
    assert mask[1, 1].tolist() == [True] * 4 + [False] * 2  # position 3
    assert mask[2].any(axis=-1).all()  # a slot that sends nothing still sees position 0: no all -inf row


def test_the_same_row_twice_in_one_call_is_refused(target):
    rows = start_rows(target, 2)
    with pytest.raises(ValueError, match="row 0 appears more than once"):
        score_batch(target, [[1], [2]], [rows[0], rows[0]])


def test_rows_of_two_batches_are_scored_row_by_row(target):
    a, b = start_rows(target, 2), start_rows(target, 2)
    out = score_batch(target, [[1, 2], [3]], [a[0], b[1]])  # two batches: no shared array, one by one
    assert [x.shape[0] for x in out] == [2, 1] and a[0].length == 2 and b[1].length == 1


def crowded_and_alone(target, call, row: int):
    """Row `row`'s logits for a ragged block, in a batch of eight texts of different lengths and alone."""
    rng = np.random.default_rng(12)
    texts = [rng.integers(0, target.vocab_size, n).tolist() for n in (60, 41, 33, 25, 17, 12, 9, 5)]
    blocks = [rng.integers(0, target.vocab_size, 1 + i % 5).tolist() for i in range(8)]
    crowd, alone = start_rows(target, 8), start_rows(target, 1)
    call(target, texts, crowd)
    call(target, texts[row : row + 1], alone)
    return call(target, blocks, crowd)[row], call(target, blocks[row : row + 1], alone)[0]


@pytest.mark.parametrize("row", [0, 3, 7])
def test_the_invariant_call_gives_a_row_the_same_logits_whatever_its_batch_mates(target, row):
    crowded, alone = crowded_and_alone(target, invariant_score_batch, row)
    assert np.array_equal(crowded, alone)
    cache = target.start()  # and the model's own logits, to float32 rounding
    rng = np.random.default_rng(12)
    text = [rng.integers(0, target.vocab_size, n).tolist() for n in (60, 41, 33, 25, 17, 12, 9, 5)][row]
    assert (
        np.abs(invariant_score_batch(target, [text], start_rows(target, 1))[0] - target.score(text, cache)).max()
        < FLOAT32
    )


def test_the_invariant_call_gives_a_position_the_same_logits_in_a_block_or_one_at_a_time(target):
    """A block across position 64 (a KEY_BLOCK boundary) against the same tokens sent one by one."""
    rng = np.random.default_rng(5)
    text, block = rng.integers(0, target.vocab_size, 60).tolist(), rng.integers(0, target.vocab_size, 7).tolist()
    for call, invariant in ((invariant_score_batch, True), (score_batch, False)):  # the model's own call: control
        blockwise, stepwise = start_rows(target, 1), start_rows(target, 1)
        call(target, [text], blockwise)
        call(target, [text], stepwise)
        together = call(target, [block], blockwise)[0]  # (7, V)
        one_by_one = np.concatenate([call(target, [[token]], stepwise)[0] for token in block])  # (7, V)
        assert np.array_equal(together, one_by_one) == invariant


def test_the_padded_call_is_not_invariant_the_control(target):
    differs = [not np.array_equal(*crowded_and_alone(target, score_batch, row)) for row in range(8)]
    assert any(differs)  # the test above can fail: the padded call's rounding moves with the batch


# --- 2. texts, row by row --------------------------------------------------------------------------


@pytest.mark.parametrize("params", [SamplingParams(0.0), SamplingParams(1.0), SamplingParams(0.8, top_k=20)])
def test_generate_batch_writes_each_rows_text_as_generate_alone(target, prompts, params):
    rngs = None if params.greedy else [np.random.default_rng([7, i]) for i in range(len(prompts))]
    batched = generate_batch(target, prompts, 40, params, rngs)
    for i, prompt in enumerate(prompts):
        alone = generate(target, prompt, 40, params, None if params.greedy else np.random.default_rng([7, i]))
        assert np.array_equal(batched.rows[i].tokens, alone.tokens), f"row {i}"
        assert batched.rows[i].target_calls == alone.target_calls
    assert len(batched.calls) == 40 and batched.calls[0].rows == len(prompts)
    assert batched.tokens == 40 * len(prompts) and batched.padding == 1.0


def test_rows_finish_on_their_own_at_the_end_token(target, prompts):
    end = specdec.load_tokenizer().encode("\n")[0]
    batched = generate_batch(target, prompts, 60, SamplingParams(0.0), end_token=end)
    for i, prompt in enumerate(prompts):
        alone = generate(target, prompt, 60, SamplingParams(0.0), end_token=end)
        assert np.array_equal(batched.rows[i].tokens, alone.tokens)
    sizes = {row.tokens.size for row in batched.rows}
    assert len(sizes) > 1, "the test needs rows that stop at different steps"
    assert [call.rows for call in batched.calls] == sorted((call.rows for call in batched.calls), reverse=True)


@pytest.mark.parametrize(
    ("params", "gamma", "verify"),
    [
        (SamplingParams(0.0), "auto", "token"),
        (SamplingParams(1.0), "auto", "token"),
        (SamplingParams(1.0), 3, "block"),
        (SamplingParams(0.7, top_p=0.9), 4, "token"),
    ],
)
def test_speculative_generate_batch_writes_each_rows_text_as_alone(target, draft, prompts, params, gamma, verify):
    rngs = None if params.greedy else [np.random.default_rng([8, i]) for i in range(len(prompts))]
    batched = speculative_generate_batch(target, draft, prompts, 48, params, gamma, rngs, verify=verify)
    for i, prompt in enumerate(prompts):
        rng = None if params.greedy else np.random.default_rng([8, i])
        alone = speculative_generate(target, draft, prompt, 48, params, gamma, rng, verify=verify)
        assert np.array_equal(batched.rows[i].tokens, alone.tokens), f"row {i}"
        assert batched.rows[i].accepted_per_round == alone.accepted_per_round
        if params.greedy:
            assert np.array_equal(alone.tokens, generate(target, prompt, 48, params).tokens)
    assert batched.tokens == 48 * len(prompts)
    assert len(batched.calls) == max(row.target_calls for row in batched.rows)  # one call per round, all rows


def test_a_batch_of_one_is_generate_bit_for_bit(target, draft, prompts):
    params = SamplingParams(1.0)
    one = generate_batch(target, prompts[:1], 30, params, [np.random.default_rng(3)])
    assert np.array_equal(one.rows[0].tokens, generate(target, prompts[0], 30, params, np.random.default_rng(3)).tokens)
    spec = speculative_generate_batch(target, draft, prompts[:1], 30, params, "auto", [np.random.default_rng(4)])
    alone = speculative_generate(target, draft, prompts[0], 30, params, "auto", np.random.default_rng(4))
    assert np.array_equal(spec.rows[0].tokens, alone.tokens)


def test_zero_new_tokens(target, draft, prompts):
    assert generate_batch(target, prompts, 0, GREEDY).tokens == 0
    run = speculative_generate_batch(target, draft, prompts, 0, GREEDY)
    assert run.tokens == 0 and run.calls == []


# --- 3. exact per row ------------------------------------------------------------------------------

STARTS = [[0], [1], [2], [0]]  # rows 0 and 3 after the same token: their texts must be independent
N_BATCHES = 3000


def tiny_texts(setting: str, seeds, verify: str = "token", gamma: int = 2) -> np.ndarray:
    """(N_BATCHES, 4): each row's first three tokens as one index in [0, V**3), from batches of four rows."""
    params = SETTINGS[setting]
    target, draft = TableModel(TARGET_LOGITS), TableModel(DRAFT_LOGITS)
    texts = np.zeros((N_BATCHES, len(STARTS)), dtype=np.int64)
    for k in range(N_BATCHES):
        rngs = [np.random.default_rng(seeds(k, i)) for i in range(len(STARTS))]
        run = speculative_generate_batch(target, draft, STARTS, 3, params, gamma, rngs, verify=verify)
        texts[k] = [np.ravel_multi_index(tuple(row.tokens), (V,) * 3) for row in run.rows]
    return texts


def row_laws(setting: str) -> list[np.ndarray]:
    p, _ = tables(setting)
    return [target_law(bigram(p), tuple(start), 3).ravel() for start in STARTS]


def row_p_values(texts: np.ndarray, setting: str) -> list[float]:
    """Each row's texts against the target's law of three tokens after its prompt (all positions and pairs)."""
    return [
        chi_square_test(np.bincount(texts[:, i], minlength=V**3), law).p_value
        for i, law in enumerate(row_laws(setting))
    ]


def pair_p_value(texts: np.ndarray, setting: str) -> float:
    """Rows 0 and 3 (the same prompt) against the product of their laws: independence across rows."""
    laws = row_laws(setting)
    pairs = texts[:, 0] * V**3 + texts[:, 3]
    return chi_square_test(np.bincount(pairs, minlength=V**6), np.outer(laws[0], laws[3]).ravel()).p_value


@pytest.mark.parametrize("verify", ["token", "block"])
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_each_row_follows_the_targets_law_and_rows_are_independent(setting, verify):
    texts = tiny_texts(setting, lambda k, i: [30, k, i], verify)
    assert min(row_p_values(texts, setting)) >= ALPHA
    assert pair_p_value(texts, setting) >= ALPHA


def test_rows_seeded_alike_pass_alone_and_fail_together():
    texts = tiny_texts("T=1", lambda k, i: [30, k])  # every row of batch k: the same seed
    assert min(row_p_values(texts, "T=1")) >= ALPHA  # each row alone is a correct sampler
    assert np.array_equal(texts[:, 0], texts[:, 3])
    assert pair_p_value(texts, "T=1") < REJECT


def test_a_neighbours_rejection_imposed_on_a_row_is_rejected(monkeypatch):
    """The mistake: when a row's neighbour rejected at position k, the row is cut at k too and draws
    its token at k from its residual, as if it had rejected there: its own law changes."""
    real_accept = batch_module.accept
    cut = {"at": None}

    def accept_cut_by_neighbour(logits, drafts, q, params, rng, rule="token"):
        emitted, n = real_accept(logits, drafts, q, params, rng, rule)
        neighbour, cut["at"] = cut["at"], (n if n < len(drafts) else None)
        if neighbour is not None and n > neighbour:  # this row kept more than its neighbour: cut it there
            p = sampling_probs(logits, params)  # (g + 1, V)
            residual = residual_distribution(p[neighbour], q[neighbour])
            emitted, n = drafts[:neighbour] + [int(draw(residual, rng))], neighbour
        return emitted, n

    monkeypatch.setattr(batch_module, "accept", accept_cut_by_neighbour)
    texts = tiny_texts("T=1", lambda k, i: [31, k, i])
    assert min(row_p_values(texts, "T=1")) < REJECT


# --- 4. draws, the cost model, the checks ------------------------------------------------------------


@pytest.mark.parametrize("vocab", [1, 3, 98, 300])
def test_draw_rows_draws_what_draw_draws_row_by_row(vocab):
    rng = np.random.default_rng(vocab)
    probs = rng.dirichlet(np.full(vocab, 0.4), size=64)  # (64, V)
    probs[::7, : vocab // 2] = 0.0  # rows with zeros
    probs /= probs.sum(axis=-1, keepdims=True)
    for dtype in (np.float64, np.float32):
        rows = probs.astype(dtype)
        got = draw_rows(rows, [np.random.default_rng([vocab, i]) for i in range(64)])
        expected = [draw(rows[i], np.random.default_rng([vocab, i])) for i in range(64)]
        assert got.dtype == np.int64 and got.tolist() == [int(x) for x in expected]


def test_draw_rows_uses_one_uniform_of_each_rows_generator():
    rngs = [np.random.default_rng(i) for i in range(3)]
    draw_rows(np.full((3, 4), 0.25), rngs)
    for i, rng in enumerate(rngs):
        fresh = np.random.default_rng(i)
        fresh.random()
        assert rng.bit_generator.state == fresh.bit_generator.state


def test_time_batch_times_every_shape(target):
    times = time_batch(target, [1, 3], [1, 2], context=16, repeats=2)
    assert set(times) == {(1, 1), (1, 2), (3, 1), (3, 2)} and all(t > 0 for t in times.values())


def test_time_batch_times_the_call_it_is_given(target):
    shapes = []

    def counting(model, tokens, states):
        shapes.append((len(tokens), len(tokens[0])))
        return invariant_score_batch(model, tokens, states)

    times = time_batch(target, [2], [1, 3], context=16, repeats=2, call=counting)
    assert set(times) == {(2, 1), (2, 3)}
    assert sorted(set(shapes)) == [(2, 1), (2, 3), (2, 16)] and len(shapes) == 1 + 2 * (2 + 2)  # + the texts


def test_the_cost_model_prices_calls_on_the_grid():
    times = {(1, 1): 1.0, (1, 3): 2.0, (4, 1): 2.0, (4, 3): 6.0}
    assert call_cost(times, 1, 2) == 1.5 and call_cost(times, 4, 3) == 6.0
    assert call_cost(times, 2, 1) == pytest.approx(1 + 1 / 3)  # linear in B between 1 and 4
    assert priced_call(times, TargetCall(4, 3, 12, 0.0)) == 6.0  # uniform: the grid itself
    assert priced_call(times, TargetCall(4, 3, 4 + 4 + 1 + 1, 0.0)) == pytest.approx((call_cost(times, 4, 2.5) + 6) / 2)
    row = GenerationResult(np.zeros(3, np.int64), 3, 0.0)
    plain = BatchResult([row, row], seconds=10.0, calls=[TargetCall(2, 5, 10, 1.0)] + [TargetCall(2, 1, 2, 2.0)] * 2)
    assert predicted_seconds(plain, {(1, 1): 1.0, (2, 1): 1.5}) == pytest.approx(1.0 + 2 * 1.5 + (10.0 - 5.0))
    spec_row = SpeculativeResult(np.zeros(6, np.int64), 2, 4, 4, 3, 0.0)
    spec = BatchResult([spec_row, spec_row], seconds=8.0, calls=[TargetCall(2, 6, 12, 1.0), TargetCall(2, 3, 6, 3.0)])
    grid = {(1, 1): 1.0, (1, 3): 2.0, (2, 1): 1.5, (2, 3): 2.5}
    assert predicted_seconds(spec, grid) == pytest.approx(1.0 + 2.5 + 4.0)
    rate_plain, rate_spec = 6 / predicted_seconds(plain, grid), 12 / predicted_seconds(spec, grid)
    assert batch_speedup(plain, spec, grid) == pytest.approx(rate_spec / rate_plain)


def test_a_batch_cache_moves_a_row_down(target):
    rows = start_rows(target, 3)
    rows[2].length = 4
    rows[2].batch.kv[:, 2, :, :, :4] = 7.0
    rows[2].batch.move(rows[2], 0)
    assert rows[2].slot == 0 and (rows[2].keys[:, :, :4] == 7.0).all()


def test_a_batch_is_freed_as_soon_as_its_rows_are_dropped(target):
    """No reference cycle between a batch and its rows: its array (MBs) goes at once, not at the next gc."""

    def batches() -> int:
        return sum(isinstance(o, BatchCache) for o in gc.get_objects())

    gc.disable()  # only reference counting may free them
    try:
        before = batches()
        rows = start_rows(target, 4)
        batch = weakref.ref(rows[0].batch)
        del rows
        assert batch() is None
        generate_batch(target, [np.array([1, 2]), np.array([3])], 3, SamplingParams(temperature=0.0))
        speculative_generate_batch(target, target, [np.array([1, 2])], 3, SamplingParams(temperature=0.0), 2)
        assert batches() == before, "a run's batches outlived it"
    finally:
        gc.enable()


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda t, d, p: generate_batch(t, "abc", 5), TypeError, "prompts must be a non-empty list"),
        (lambda t, d, p: generate_batch(t, [], 5), TypeError, "prompts must be a non-empty list"),
        (lambda t, d, p: generate_batch(t, [p[0], "x"], 5), TypeError, "prompts[1] must be token ids"),
        (lambda t, d, p: generate_batch(t, p, 5, SamplingParams(1.0)), TypeError, "rngs must be a list of 6"),
        (
            lambda t, d, p: generate_batch(t, p, 5, SamplingParams(1.0), [np.random.default_rng()] * 2),
            TypeError,
            "of length 2",
        ),
        (
            lambda t, d, p: generate_batch(t, p[:2], 5, SamplingParams(1.0), [np.random.default_rng()] * 2),
            ValueError,
            "rngs[0] and rngs[1] are the same generator",
        ),
        (lambda t, d, p: generate_batch(t, p[:2], 5, SamplingParams(1.0), [1, 2]), TypeError, "Generator"),
        (lambda t, d, p: generate_batch(t, p, -1, GREEDY), ValueError, "max_new_tokens"),
        (lambda t, d, p: generate_batch(t, p, 300, GREEDY), ValueError, "max_context"),
        (
            lambda t, d, p: speculative_generate_batch(t, TableModel(TARGET_LOGITS), p, 5, GREEDY),
            ValueError,
            "share a vocabulary",
        ),
        (lambda t, d, p: speculative_generate_batch(t, d, p, 5, GREEDY, gamma=0), ValueError, "gamma"),
        (lambda t, d, p: speculative_generate_batch(t, d, p, 5, GREEDY, verify="tree"), ValueError, "verify"),
        (lambda t, d, p: time_batch(t, [1, 1], [1]), ValueError, "batch_sizes must be distinct"),
        (lambda t, d, p: time_batch(t, [1], [1], context=256, repeats=1), ValueError, "max_context"),
        (lambda t, d, p: time_batch(t, [0], [1]), ValueError, "each batch size"),
    ],
)
def test_every_argument_is_checked_with_a_message_naming_it(target, draft, prompts, call, error, words):
    with pytest.raises(error, match=None) as raised:
        call(target, draft, prompts)
    assert words in str(raised.value)
