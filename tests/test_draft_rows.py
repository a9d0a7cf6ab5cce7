"""Notebook 08's memoised draft tokens: the same drafts, the same rows q and the same uniforms as afresh.

`propose` draws each sampled draft token with `draft_token`, which the package's Going further replaces
with one that remembers q and its running sums per distinct (settings, row). That is a cache, never a
change of results: every draft, every bit of every q, and the generator's state afterwards must equal
`draft_token_afresh`'s (section 4's), through `propose` and through whole generations, for drafts whose
rows repeat (the n-gram, prompt lookup) and for one whose rows never do (the GPT), narrow rows and wide
ones. The negative controls are memos with a bug (a key without the settings; running sums added in
another order) that the same comparisons must catch.
"""

import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import specdec
import specdec.speculative as speculative
from specdec import SamplingParams
from specdec.drawing import BLOCK, draw, draw_row
from specdec.lookup import PromptLookupDraft
from specdec.pipeline import sampling_probs
from specdec.speculative import draft_token, draft_token_afresh, propose

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "training"))
from corpus import load_corpus  # noqa: E402
from helpers import FixedUniform  # noqa: E402

SETTINGS = [
    SamplingParams(temperature=1.0),
    SamplingParams(temperature=0.7),
    SamplingParams(temperature=1.0, top_p=0.9),
    SamplingParams(temperature=0.7, top_k=20),
    SamplingParams(temperature=1.3, top_k=5, top_p=0.8, min_p=0.05),
]


@pytest.fixture(scope="module")
def models():
    target, ngram = specdec.load_model("target"), specdec.load_model("draft")
    return {"ngram": ngram, "lookup": PromptLookupDraft(ngram), "gpt": target}


@pytest.fixture(scope="module")
def prompts():
    stream = load_corpus().heldout
    return [stream[start : start + 40].astype(np.int64) for start in (1_000, 57_000, 230_000)]


def draft_text(token_of, draft, prompt, params, seed, new_tokens=60, gamma=4):
    """The draft writing after `prompt` through `propose`, every draft kept, each sampled token from
    `token_of` (a draft_token): (text, rows q, the generator's state)."""
    with pytest.MonkeyPatch.context() as patch:
        if token_of is not speculative.draft_token:  # propose looks draft_token up at every token
            patch.setattr(speculative, "draft_token", token_of)
        rng, state, sequence, rows = np.random.default_rng(seed), draft.start(), prompt.tolist(), []
        while len(sequence) < prompt.size + new_tokens:
            drafts, q = propose(draft, state, sequence, gamma, params, rng)
            assert q.shape == (len(drafts), draft.vocab_size) and q.dtype == np.float64
            sequence += drafts
            rows.append(q)
    return sequence[prompt.size :], np.concatenate(rows), rng.bit_generator.state


def differences(token_of, reference, draft, prompts, params, seeds=(0, 1)) -> list[str]:
    """What differs between two draft_tokens on the same prompts and seeds: texts, any bit of q, the rng."""
    found = []
    for seed in seeds:
        for i, prompt in enumerate(prompts):
            text, q, rng_state = draft_text(token_of, draft, prompt, params, seed)
            text_ref, q_ref, rng_ref = draft_text(reference, draft, prompt, params, seed)
            if text != text_ref:
                found.append(f"prompt {i}, seed {seed}: different drafts")
            elif q.tobytes() != q_ref.tobytes():
                found.append(f"prompt {i}, seed {seed}: q differs in some bit")
            if rng_state != rng_ref:
                found.append(f"prompt {i}, seed {seed}: a different number of uniforms drawn")
    return found


@pytest.mark.parametrize("name", ["ngram", "lookup", "gpt"])
@pytest.mark.parametrize("params", SETTINGS, ids=str)
def test_the_memo_draws_what_afresh_draws(models, prompts, name, params):
    speculative.draft_rows.clear()
    cold = differences(draft_token, draft_token_afresh, models[name], prompts, params)  # the memo filling up
    warm = differences(draft_token, draft_token_afresh, models[name], prompts, params)  # every row met before
    assert cold == warm == []


def test_the_ngram_meets_its_rows_again(models, prompts):
    """The point of the memo: the n-gram's rows repeat, so fewer rows are stored than tokens drawn, and
    writing the same texts again (the same seeds) stores none."""
    speculative.draft_rows.clear()
    drawn = sum(len(draft_text(draft_token, models["ngram"], p, SETTINGS[0], s)[0]) for p in prompts for s in (0, 1))
    stored = len(speculative.draft_rows)
    assert 0 < stored < 0.8 * drawn
    for p in prompts:
        draft_text(draft_token, models["ngram"], p, SETTINGS[0], 0)
    assert len(speculative.draft_rows) == stored


@pytest.mark.parametrize("params", SETTINGS, ids=str)
def test_whole_generations_are_the_same_as_afresh(models, prompts, params, monkeypatch):
    target = models["gpt"]
    with_memo = [
        specdec.speculative_generate(target, models["ngram"], p, 40, params, rng=np.random.default_rng(i)).tokens
        for i, p in enumerate(prompts)
    ]
    monkeypatch.setattr(speculative, "draft_token", draft_token_afresh)  # propose looks it up at every token
    afresh = [
        specdec.speculative_generate(target, models["ngram"], p, 40, params, rng=np.random.default_rng(i)).tokens
        for i, p in enumerate(prompts)
    ]
    for a, b in zip(with_memo, afresh, strict=True):
        np.testing.assert_array_equal(a, b)


def edge_rows(vocab: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Rows that stress the search: zeros at the end (-inf), a point mass, ties, float32, huge spreads."""
    rows = [rng.normal(size=vocab) * 3]
    tail = rng.normal(size=vocab)
    tail[max(1, vocab // 2) :] = -np.inf  # the last half has probability 0: the rounding repair's case
    rows.append(tail)
    point = np.full(vocab, -np.inf)
    point[vocab - 1] = 0.0  # all mass on the last token
    rows.append(point)
    rows.append(np.zeros(vocab))  # all tied
    rows.append((rng.normal(size=vocab) * 3).astype(np.float32))
    rows.append(rng.normal(size=vocab) * 300)  # nearly one-hot, many exact zeros after exp
    return rows


@pytest.mark.parametrize("vocab", [1, 2, 98, BLOCK, BLOCK + 1, 1_000])
@pytest.mark.parametrize("params", SETTINGS, ids=str)
def test_draft_token_is_draw_of_sampling_probs(vocab, params):
    """Token and q equal int(draw(q, rng)) and sampling_probs(row), also when the row comes back (memo hit)."""
    speculative.draft_rows.clear()
    for row in edge_rows(vocab, np.random.default_rng(vocab)):
        for seed in range(20):  # the first call fills the memo (if narrow), the others hit it
            rng, reference = np.random.default_rng(seed), np.random.default_rng(seed)
            token, q = draft_token(row, params, rng)
            q_ref = sampling_probs(row, params)
            assert token == int(draw(q_ref, reference)) and isinstance(token, int)
            assert q.tobytes() == q_ref.tobytes()
            assert rng.bit_generator.state == reference.bit_generator.state
    assert (len(speculative.draft_rows) > 0) == (vocab <= BLOCK)  # wide rows are not remembered


def test_draw_row_is_draws_search_for_one_row():
    rng = np.random.default_rng(3)
    for row in edge_rows(98, rng):
        q = sampling_probs(row, SETTINGS[0])
        for seed in range(50):
            got = draw_row(np.cumsum(q), q.sum(), q, np.random.default_rng(seed))
            assert got == draw(q, np.random.default_rng(seed)) and q[got] > 0


def test_the_memo_starts_afresh_when_full(models, prompts, monkeypatch):
    monkeypatch.setattr(speculative, "DRAFT_ROWS_MAX", 5)
    speculative.draft_rows.clear()
    assert differences(draft_token, draft_token_afresh, models["ngram"], prompts, SETTINGS[2]) == []
    assert len(speculative.draft_rows) <= 5


def test_threads_sharing_the_memo_draw_what_one_thread_draws(models, prompts):
    """Four generations at once share the memo (and may clear it); each draws what it draws alone."""
    draft, params = models["ngram"], SETTINGS[0]
    alone = [draft_text(draft_token_afresh, draft, prompts[i % 3], params, seed=i)[0] for i in range(8)]
    speculative.draft_rows.clear()
    together: dict[int, list] = {}
    errors = []

    def write(i):
        try:
            together[i] = draft_text(draft_token, draft, prompts[i % 3], params, seed=i)[0]
        except Exception as error:  # noqa: BLE001 (reported below, with the thread's number)
            errors.append((i, error))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == [] and [together[i] for i in range(8)] == alone


def test_a_remembered_row_cannot_be_changed(models, prompts):
    """q is shared by every round that meets its row again: it must be read-only."""
    speculative.draft_rows.clear()
    row = np.random.default_rng(0).normal(size=98)
    _, q = draft_token(row, SETTINGS[0], np.random.default_rng(0))
    with pytest.raises(ValueError, match="read-only"):
        q[0] = 1.0


# --- Negative controls: memos with a bug, caught by the same comparisons -------------------------


def memo_token(key_of, sums_of):
    """A draft_token whose memo is keyed by key_of(row, params) and stores the running sums sums_of(q)."""
    memo = {}

    def token_of(logits, params, rng):
        key = key_of(logits, params)
        if key not in memo:
            q = sampling_probs(logits, params)
            memo[key] = (q, *sums_of(q))
        q, cdf, total = memo[key]
        return int(draw_row(cdf, total, q, rng)), q

    return token_of


def test_the_comparisons_catch_a_memo_keyed_without_the_settings(models, prompts):
    forgetful = memo_token(lambda row, params: row.tobytes(), lambda q: (np.cumsum(q), q.sum()))
    correct = memo_token(lambda row, params: (params, row.tobytes()), lambda q: (np.cumsum(q), q.sum()))
    for params in SETTINGS[:2]:  # the second setting meets rows the first stored
        assert differences(correct, draft_token_afresh, models["ngram"], prompts, params) == []
    memo_reused = []
    for params in SETTINGS[:2]:
        memo_reused += differences(forgetful, draft_token_afresh, models["ngram"], prompts, params)
    assert memo_reused, "a memo that ignores the settings serves T = 1's q at T = 0.7 and must be caught"


def test_the_comparisons_catch_running_sums_in_another_order(models, prompts):
    """Sums of the same q added in another order differ in the last bits: some draw must move, or q's bytes."""
    reordered = memo_token(lambda row, params: row.tobytes(), lambda q: (np.cumsum(q[::-1])[::-1], q.sum()))
    assert differences(reordered, draft_token_afresh, models["ngram"], prompts, SETTINGS[0])


def edge_uniforms(q: np.ndarray) -> list[float]:
    """Uniforms within two ulps of every step u * total = F_i: where a total or a running sum off by one
    ulp would change the token."""
    cdf, total = np.cumsum(q), q.sum()
    uniforms = []
    for step in cdf[:-1]:
        u = step / total
        uniforms += [u, np.nextafter(u, 0), np.nextafter(np.nextafter(u, 0), 0), np.nextafter(u, 1)]
    return [u for u in uniforms if 0 <= u < 1]


def test_draws_at_every_step_are_draws(models, prompts):
    """At uniforms that sit on the steps of the running sums, a remembered row draws what draw draws."""
    speculative.draft_rows.clear()
    rows = [models["ngram"].score(p, models["ngram"].start())[-1] for p in prompts]  # (V,) log rows
    rows += edge_rows(98, np.random.default_rng(9))
    for row in rows:
        for params in SETTINGS:
            q = sampling_probs(row, params)
            for u in edge_uniforms(q):
                for _ in range(2):  # the first fills the memo, the second reads it
                    assert draft_token(row, params, FixedUniform(u))[0] == int(draw(q, FixedUniform(u)))


def test_the_package_uses_the_memo():
    """propose looks `draft_token` up at every sampled token: the package's must be the memoised one."""
    assert speculative.draft_token is not draft_token_afresh
    assert "draft_rows" in speculative.draft_token.__code__.co_names
    assert "draft_token" in speculative.propose.__code__.co_names
