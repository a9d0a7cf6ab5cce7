"""Notebook 08's exercise checkers: the reference solutions pass, realistic wrong answers and the stub fail."""

import importlib.util
import inspect
import itertools
from pathlib import Path

import nbformat
import numpy as np
import pytest
from helpers import diagnosis, markdown_cells

from checkers import ex08
from specdec import SamplingParams, generate, speculative_generate

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
NOTEBOOK = ROOT / "notebooks" / "08_greedy_speculative_decoding.ipynb"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, SOLUTIONS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


accept_solution = load("ex08_accept_greedy")
lengths_solution = load("ex08_cache_lengths")
rollback_solution = load("ex08_rollback")


def stub(*args):
    raise NotImplementedError


# --- Exercise 1: accept_greedy ------------------------------------------------------------------


def argmin_without_all(drafts, target_argmax):  # a fully accepted round has no False: argmin gives 0
    drafts, best = np.asarray(drafts), np.asarray(target_argmax)
    n = int(np.argmin(drafts == best[: drafts.size]))
    return n, np.append(drafts[:n], best[n])


def counts_every_match(drafts, target_argmax):  # a match after the first mismatch counts too
    drafts, best = np.asarray(drafts), np.asarray(target_argmax)
    n = int((drafts == best[: drafts.size]).sum())
    return n, np.append(drafts[:n], best[n])


def no_bonus(drafts, target_argmax):  # forgets the bonus token when every draft is accepted
    n, emitted = accept_solution.accept_greedy(drafts, target_argmax)
    return (n, emitted[:-1]) if n == len(drafts) else (n, emitted)


def compares_with_the_next_choice(drafts, target_argmax):  # off by one: draft i against the target's choice i + 1
    drafts, best = np.asarray(drafts), np.asarray(target_argmax)
    matches = drafts == best[1:]
    n = drafts.size if matches.all() else int(np.argmin(matches))
    return n, np.append(drafts[:n], best[n])


def emits_the_rejected_draft(drafts, target_argmax):  # keeps the draft token at the mismatch instead of the target's
    n, emitted = accept_solution.accept_greedy(drafts, target_argmax)
    if n < len(drafts):
        emitted = np.append(emitted[:-1], np.asarray(drafts)[n])
    return n, emitted


def with_a_python_loop(drafts, target_argmax):  # right, but the exercise asks for no Python loop
    n = 0
    while n < len(drafts) and drafts[n] == target_argmax[n]:
        n += 1
    return n, np.array(list(drafts[:n]) + [target_argmax[n]], dtype=np.int64)


def asarray_without_dtype(drafts, target_argmax):  # np.asarray([]) is float64: emits [8.] for gamma = 0
    drafts, best = np.asarray(drafts), np.asarray(target_argmax)
    matches = drafts == best[: drafts.size]
    n = drafts.size if matches.all() else int(np.argmin(matches))
    return n, np.append(drafts[:n], best[n])


def float_count(drafts, target_argmax):  # the count comes out as a float
    drafts, best = np.asarray(drafts, dtype=np.int64), np.asarray(target_argmax)
    n = np.cumprod(drafts == best[: drafts.size], dtype=float).sum()
    return n, np.append(drafts[: int(n)], best[int(n)])


def cumprod_count(drafts, target_argmax):  # right: the running product of the matches counts the matching prefix
    drafts, best = np.asarray(drafts, dtype=np.int64), np.asarray(target_argmax)
    n = int(np.cumprod(drafts == best[: drafts.size]).sum())
    return n, np.append(drafts[:n], best[n])


def argmin_with_a_sentinel(drafts, target_argmax):  # right: a False appended after the drafts stops argmin at gamma
    drafts, best = np.asarray(drafts, dtype=np.int64), np.asarray(target_argmax)
    n = int(np.argmin(np.append(drafts == best[: drafts.size], False)))
    return n, np.append(drafts[:n], best[n])


def takewhile_count(drafts, target_argmax):  # no for/while, but itertools iterates in Python, element by element
    n = len(list(itertools.takewhile(lambda pair: pair[0] == pair[1], zip(drafts, target_argmax, strict=False))))
    return n, np.asarray(list(drafts)[:n] + [target_argmax[n]], dtype=np.int64)


def first_mismatch(drafts, best):  # a helper with the loop inside
    n = 0
    while n < len(drafts) and drafts[n] == best[n]:
        n += 1
    return n


def calls_a_looping_helper(drafts, target_argmax):  # the loop hidden in a helper
    n = first_mismatch(drafts, target_argmax)
    return n, np.asarray(list(drafts)[:n] + [target_argmax[n]], dtype=np.int64)


def recursive_count(drafts, target_argmax):  # recursion: a loop by another name
    if len(drafts) == 0 or drafts[0] != target_argmax[0]:
        return 0, np.asarray(target_argmax[:1], dtype=np.int64)
    n, rest = recursive_count(drafts[1:], target_argmax[1:])
    return n + 1, np.append(np.asarray(drafts[:1], dtype=np.int64), rest)


def pops_the_bonus(drafts, target_argmax):  # takes the bonus with list.pop(): changes the caller's list
    bonus = target_argmax.pop() if isinstance(target_argmax, list) else target_argmax[-1]
    return accept_solution.accept_greedy(drafts, list(target_argmax) + [bonus])


def appends_a_sentinel(drafts, target_argmax):  # right answer, but appends a sentinel to the caller's list
    if isinstance(drafts, list):
        drafts.append(-1)
        drafts = drafts[:-1]
    return accept_solution.accept_greedy(drafts, target_argmax)


def first_false_with_next(drafts, target_argmax):  # right: next() takes one element, no loop
    drafts, best = np.asarray(drafts, dtype=np.int64), np.asarray(target_argmax, dtype=np.int64)
    n = int(next(iter(np.flatnonzero(drafts != best[: drafts.size])), drafts.size))
    return n, np.append(drafts[:n], best[n])


def min_with_a_key(drafts, target_argmax):  # min(..., key=...) calls a Python function per element
    n = min(range(len(drafts) + 1), key=lambda i: (i < len(drafts) and drafts[i] == target_argmax[i], i))
    return n, np.asarray(list(drafts)[:n] + [target_argmax[n]], dtype=np.int64)


def emits_a_list(drafts, target_argmax):  # the right tokens, as a Python list (the notebook's loop reference's kind)
    n, emitted = accept_solution.accept_greedy(drafts, target_argmax)
    return n, emitted.tolist()


def emits_int32(drafts, target_argmax):  # the right tokens, as int32
    n, emitted = accept_solution.accept_greedy(drafts, target_argmax)
    return n, emitted.astype(np.int32)


def test_accept_solution_passes():
    assert ex08.check_accept_greedy(accept_solution.accept_greedy)


@pytest.mark.parametrize("right", [cumprod_count, argmin_with_a_sentinel, first_false_with_next])
def test_accept_other_right_answers_pass(right):
    assert ex08.check_accept_greedy(right)


def test_accept_names_the_loop_and_the_dtype(capsys):
    ex08.check_accept_greedy(with_a_python_loop)
    assert "`while` loop" in capsys.readouterr().out
    ex08.check_accept_greedy(asarray_without_dtype)
    out = capsys.readouterr().out
    assert "float64" in out and "gamma = 0" in out


@pytest.mark.parametrize(
    "wrong",
    [
        stub,
        argmin_without_all,
        counts_every_match,
        no_bonus,
        compares_with_the_next_choice,
        emits_the_rejected_draft,
        with_a_python_loop,
        asarray_without_dtype,
        float_count,
        takewhile_count,
        min_with_a_key,
        calls_a_looping_helper,
        recursive_count,
        pops_the_bonus,
        appends_a_sentinel,
        emits_a_list,
        emits_int32,
    ],
)
def test_accept_rejects(wrong, capsys):
    assert not ex08.check_accept_greedy(wrong)
    assert "✗" in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong, expected",
    [
        (takewhile_count, "`takewhile` (line 2 of the function), a Python-level iteration"),
        (calls_a_looping_helper, "a `while` loop (line 3 of `first_mismatch`, which it calls)"),
        (recursive_count, "recursion"),
        (pops_the_bonus, "changed its input `target_argmax` in place: it was [5, 7, 9, 2] and is now [5, 7, 9]"),
        (appends_a_sentinel, "changed its input `drafts` in place: it was [5, 7, 9] and is now [ 5, 7, 9, -1]"),
    ],
)
def test_accept_names_a_hidden_loop_or_a_changed_input(wrong, expected, capsys):
    ex08.check_accept_greedy(wrong)
    assert expected in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong, first_words",
    [
        (emits_a_list, "your function returned a list where a numpy array is asked (tokens to emit, dtype int64"),
        (emits_int32, "your function returned int32 tokens to emit where int64 is asked"),
    ],
)
def test_accept_asks_for_an_int64_array_diagnosis_first(wrong, first_words, capsys):
    assert not ex08.check_accept_greedy(wrong)
    message = diagnosis(capsys.readouterr().out)
    assert message.startswith(first_words) and "(for drafts [5, 7, 9] (gamma = 3)" in message, message


def test_the_statement_says_emitted_is_an_int64_array():
    """The checker refuses a list for `emitted`: the exercise says so before the learner writes one."""
    statement = next(source for source in markdown_cells(NOTEBOOK) if source.startswith("### Exercise 1"))
    assert "int64 numpy" in statement and "refuses a list" in statement


def test_accept_known_values():
    n, emitted = accept_solution.accept_greedy([5, 7, 9], [5, 8, 9, 2])
    assert n == 1 and emitted.tolist() == [5, 8]
    n, emitted = accept_solution.accept_greedy([], [8])
    assert n == 0 and emitted.tolist() == [8]


# --- Exercise 2: cache_lengths ------------------------------------------------------------------


def draft_like_target(sequence_length, gamma, n_accepted):  # the draft rolled back to the target's length
    return sequence_length + n_accepted, sequence_length + n_accepted


def keeps_the_correction(sequence_length, gamma, n_accepted):  # both keep the token the target chose
    kept = sequence_length + n_accepted + 1
    return kept, min(kept, sequence_length + gamma - 1)


def no_rollback(sequence_length, gamma, n_accepted):  # what each model has read, rejected drafts included
    return sequence_length + gamma, sequence_length + gamma - 1


def draft_reads_every_draft(sequence_length, gamma, n_accepted):  # as if the draft read its last draft too
    kept = sequence_length + n_accepted
    return kept, min(kept, sequence_length + gamma)


def lengths_as_floats(sequence_length, gamma, n_accepted):  # the right values, as floats
    kept = sequence_length + n_accepted
    return float(kept), float(min(kept, sequence_length + gamma - 1))


def one_less_after_a_full_accept(sequence_length, gamma, n_accepted):  # right: a bool counts as 0 or 1
    kept = sequence_length + n_accepted
    return kept, kept - int(n_accepted == gamma)


def test_lengths_solution_passes():
    assert ex08.check_cache_lengths(lengths_solution.cache_lengths)
    assert ex08.check_cache_lengths(one_less_after_a_full_accept)


@pytest.mark.parametrize(
    "wrong", [stub, draft_like_target, keeps_the_correction, no_rollback, draft_reads_every_draft, lengths_as_floats]
)
def test_lengths_rejects(wrong, capsys):
    assert not ex08.check_cache_lengths(wrong)
    assert "✗" in capsys.readouterr().out


def test_lengths_message_names_the_full_accept_case(capsys):
    ex08.check_cache_lengths(draft_like_target)
    message = diagnosis(capsys.readouterr().out)
    assert message.startswith("expected (target_length, draft_length) = (68, 67), got (68, 68)"), message
    assert message.endswith("(for sequence_length 64, gamma 4, n_accepted 4: every draft accepted)\n"), message


class LoggedState:
    """A decoding state that records its length after every rollback, into its model's `kept`."""

    def __init__(self, state, kept: list):
        self.state, self.kept = state, kept

    @property
    def length(self):
        return self.state.length

    def rollback(self, length):
        self.state.rollback(length)
        self.kept.append(self.state.length)


class Logged:
    """A model whose states log their length after each rollback (speculative_generate rolls back once per round)."""

    def __init__(self, model):
        self.model, self.name, self.kept = model, model.name, []
        self.vocab_size, self.max_context = model.vocab_size, model.max_context

    def start(self):
        return LoggedState(self.model.start(), self.kept)

    def score(self, tokens, state):
        return self.model.score(tokens, state.state)


@pytest.mark.parametrize("gamma", [1, 3, 4, 8])
def test_lengths_match_what_speculative_generate_leaves_in_the_models(gamma):
    """The reference formula is what the package's rollbacks leave in the bundled models, round after round."""
    target, draft = Logged(ex08.bundled("target")), Logged(ex08.bundled("draft"))
    prompt = np.array(ex08.load_tokenizer().encode("class Stack:\n    def push(self, item):\n        self."))
    result = speculative_generate(target, draft, prompt, 60, SamplingParams(0), gamma=gamma)
    length, kinds = prompt.size, set()
    for r, (g, n) in enumerate(zip(result.drafted_per_round, result.accepted_per_round, strict=True)):
        assert (target.kept[r], draft.kept[r]) == lengths_solution.cache_lengths(length, g, n)
        length += n + 1
        kinds.add(n == g)
    assert kinds == {True, False}  # fully accepted rounds and rounds with a rejection were both checked


# --- Exercise 3: spot the bug in a rollback -----------------------------------------------------


def draft_rolled_back_like_the_target(target, draft, prompt_tokens, max_new_tokens, gamma):
    """Rolls the draft back to the target's length: after a fully accepted round it has read one token less."""
    sequence = [int(t) for t in prompt_tokens]
    end = len(sequence) + max_new_tokens
    target_state, draft_state = target.start(), draft.start()
    while len(sequence) < end:
        g = min(gamma, end - len(sequence) - 1)
        drafts = []
        if g > 0:
            logits = draft.score(sequence[draft_state.length :], draft_state)[-1]
            for i in range(g):
                drafts.append(int(np.argmax(logits)))
                if i < g - 1:
                    logits = draft.score(drafts[-1:], draft_state)[0]
        logits = target.score(sequence[target_state.length :] + drafts, target_state)[-(g + 1) :]
        best = np.argmax(logits, axis=-1)
        n = next((i for i in range(g) if drafts[i] != best[i]), g)
        target_state.rollback(len(sequence) + n)
        draft_state.rollback(len(sequence) + n)  # raises after a fully accepted round
        sequence += drafts[:n] + [int(best[n])]
    return sequence[end - max_new_tokens :]


def no_caches(target, draft, prompt_tokens, max_new_tokens, gamma):
    """Right tokens, but both models re-read the whole text every round (section 3's loop)."""
    sequence = [int(t) for t in prompt_tokens]
    end = len(sequence) + max_new_tokens
    while len(sequence) < end:
        g = min(gamma, end - len(sequence) - 1)
        drafts = []
        if g > 0:
            draft_state = draft.start()
            logits = draft.score(sequence, draft_state)[-1]
            for i in range(g):
                drafts.append(int(np.argmax(logits)))
                if i < g - 1:
                    logits = draft.score(drafts[-1:], draft_state)[0]
        best = np.argmax(target.score(sequence + drafts, target.start())[-(g + 1) :], axis=-1)
        n = next((i for i in range(g) if drafts[i] != best[i]), g)
        sequence += drafts[:n] + [int(best[n])]
    return sequence[end - max_new_tokens :]


def overshoots(target, draft, prompt_tokens, max_new_tokens, gamma):
    """Always drafts gamma tokens, so the last round can emit more than max_new_tokens."""
    sequence = [int(t) for t in prompt_tokens]
    end = len(sequence) + max_new_tokens
    target_state, draft_state = target.start(), draft.start()
    while len(sequence) < end:
        logits = draft.score(sequence[draft_state.length :], draft_state)[-1]
        drafts = []
        for i in range(gamma):
            drafts.append(int(np.argmax(logits)))
            if i < gamma - 1:
                logits = draft.score(drafts[-1:], draft_state)[0]
        best = np.argmax(target.score(sequence[target_state.length :] + drafts, target_state)[-(gamma + 1) :], axis=-1)
        n = next((i for i in range(gamma) if drafts[i] != best[i]), gamma)
        target_state.rollback(len(sequence) + n)
        draft_state.rollback(min(draft_state.length, len(sequence) + n))
        sequence += drafts[:n] + [int(best[n])]
    return sequence[end - max_new_tokens :]


def emits_only_accepted_drafts_as_text(target, draft, prompt_tokens, max_new_tokens, gamma):
    """Keeps the rejected draft in the text instead of the target's correction (the rollbacks are right)."""
    sequence = [int(t) for t in prompt_tokens]
    end = len(sequence) + max_new_tokens
    target_state, draft_state = target.start(), draft.start()
    while len(sequence) < end:
        g = min(gamma, end - len(sequence) - 1)
        drafts = []
        if g > 0:
            logits = draft.score(sequence[draft_state.length :], draft_state)[-1]
            for i in range(g):
                drafts.append(int(np.argmax(logits)))
                if i < g - 1:
                    logits = draft.score(drafts[-1:], draft_state)[0]
        best = np.argmax(target.score(sequence[target_state.length :] + drafts, target_state)[-(g + 1) :], axis=-1)
        n = next((i for i in range(g) if drafts[i] != best[i]), g)
        target_state.rollback(len(sequence) + n)
        draft_state.rollback(min(draft_state.length, len(sequence) + n))
        sequence += drafts[: n + 1] if n < g else drafts + [int(best[g])]
    return sequence[end - max_new_tokens :]


FIXED_SOURCE = inspect.getsource(rollback_solution.fixed_speculative_greedy)
TARGET_LINE = "target_cache.rollback(len(sequence) + n)"
DRAFT_LINE = "draft_cache.rollback(min(draft_cache.length, len(sequence) + n))"


def one_line_changed(old: str, new: str, name: str):
    """The fixed loop of the solution with one line changed: the off-by-one rollbacks of exercise 3."""
    assert old in FIXED_SOURCE
    namespace = {"np": np}
    exec(FIXED_SOURCE.replace(old, new), namespace)
    function = namespace["fixed_speculative_greedy"]
    function.__name__ = name
    return function


# The draft keeps the rejected draft: its next catch-up is empty and `score` raises.
draft_keeps_one_too_many = one_line_changed(
    DRAFT_LINE, "draft_cache.rollback(min(draft_cache.length, len(sequence) + n + 1))", "draft_keeps_one_too_many"
)
# The draft forgets its last accepted token: the right tokens, one token re-read per round.
draft_keeps_one_too_few = one_line_changed(
    DRAFT_LINE, "draft_cache.rollback(min(draft_cache.length, len(sequence) + n - 1))", "draft_keeps_one_too_few"
)
# The target forgets its last accepted token, and `pending` does not give it back: wrong tokens.
target_keeps_one_too_few = one_line_changed(
    TARGET_LINE, "target_cache.rollback(len(sequence) + n - 1)", "target_keeps_one_too_few"
)
# The bug without the min(): wrong tokens after a rejection, a crash after a full accept.
target_keeps_one_too_many = one_line_changed(
    TARGET_LINE, "target_cache.rollback(len(sequence) + n + 1)", "target_keeps_one_too_many"
)


def target_rereads_a_token(target, draft, prompt_tokens, max_new_tokens, gamma):
    """The target rolled back one token too far, then fed everything it has not read: right tokens, a wrong cache."""
    sequence = [int(t) for t in prompt_tokens]
    end = len(sequence) + max_new_tokens
    target_state, draft_state = target.start(), draft.start()
    while len(sequence) < end:
        g = min(gamma, end - len(sequence) - 1)
        drafts = []
        if g > 0:
            logits = draft.score(sequence[draft_state.length :], draft_state)[-1]
            for i in range(g):
                drafts.append(int(np.argmax(logits)))
                if i < g - 1:
                    logits = draft.score(drafts[-1:], draft_state)[0]
        best = np.argmax(target.score(sequence[target_state.length :] + drafts, target_state)[-(g + 1) :], axis=-1)
        n = next((i for i in range(g) if drafts[i] != best[i]), g)
        target_state.rollback(max(0, len(sequence) + n - 1))  # one too far
        draft_state.rollback(min(draft_state.length, len(sequence) + n))
        sequence += drafts[:n] + [int(best[n])]
    return sequence[end - max_new_tokens :]


def never_ends(target, draft, prompt_tokens, max_new_tokens, gamma):
    """Forgets to append what a round emits: the loop would run for ever."""
    sequence = [int(t) for t in prompt_tokens]
    end = len(sequence) + max_new_tokens
    target_state = target.start()
    while len(sequence) < end:
        target.score(sequence[target_state.length :] or sequence[-1:], target_state)
        target_state.rollback(len(sequence) - 1)
    return sequence[end - max_new_tokens :]


def mixes_up_the_states(target, draft, prompt_tokens, max_new_tokens, gamma):
    """Scores the target with the draft's state (both are the same object in the 'copy' case)."""
    draft_state = draft.start()
    return target.score(list(prompt_tokens), draft_state)


def test_rollback_solution_passes():
    assert ex08.check_speculative_greedy(rollback_solution.fixed_speculative_greedy)


def delegates_to_the_package(target, draft, prompt_tokens, max_new_tokens, gamma):
    """Right tokens and right caches, but the exercise is to fix the loop, not to call the package's."""
    return speculative_generate(target, draft, prompt_tokens, max_new_tokens, SamplingParams(0), gamma).tokens


def delegates_to_generate(target, draft, prompt_tokens, max_new_tokens, gamma):
    """Plain greedy: the right tokens, with one target call per token."""
    return generate(target, prompt_tokens, max_new_tokens, SamplingParams(0)).tokens


@pytest.mark.parametrize(
    "wrong, expected",
    [(delegates_to_the_package, "calls speculative_generate"), (delegates_to_generate, "calls generate")],
)
def test_rollback_refuses_delegation(wrong, expected, capsys):
    assert not ex08.check_speculative_greedy(wrong)
    out = capsys.readouterr().out
    assert "✗" in out and expected in out and "fix the one wrong line" in out


@pytest.mark.parametrize(
    "wrong",
    [
        stub,
        ex08.buggy_speculative_greedy,
        draft_rolled_back_like_the_target,
        no_caches,
        overshoots,
        emits_only_accepted_drafts_as_text,
        draft_keeps_one_too_many,
        draft_keeps_one_too_few,
        target_keeps_one_too_few,
        target_keeps_one_too_many,
        target_rereads_a_token,
        never_ends,
        mixes_up_the_states,
    ],
)
def test_rollback_rejects(wrong, capsys):
    assert not ex08.check_speculative_greedy(wrong)
    assert "✗" in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong, expected",
    [
        (draft_keeps_one_too_many, "at the start of round 2 the draft's cache held 64 tokens, expected 63"),
        (draft_keeps_one_too_few, "the right tokens, but at the start of round 2 the draft's cache held 62 tokens"),
        (target_keeps_one_too_few, "at the start of round 2 the target's cache held 62 tokens, expected 63"),
        (target_keeps_one_too_many, "at the start of round 2 the target's cache held 64 tokens, expected 63"),
        (ex08.buggy_speculative_greedy, "at the start of round 2 the target's cache held 64 tokens, expected 63"),
        (target_rereads_a_token, "the right tokens, but at the start of round 2 the target's cache held 62 tokens"),
    ],
)
def test_an_off_by_one_rollback_is_named_with_its_round_and_lengths(wrong, expected, capsys):
    ex08.check_speculative_greedy(wrong)
    assert expected in capsys.readouterr().out


def test_a_crash_is_a_counterexample_with_its_round(capsys):
    """A loop that raises is reported with the prompt, the round, the call that raised and the cache lengths."""
    ex08.check_speculative_greedy(draft_keeps_one_too_many)
    out = capsys.readouterr().out
    assert "prompt ending" in out and "round 2 raised ValueError: score needs at least one token" in out
    assert "the draft's score call on 0 tokens" in out and "expected 63" in out
    ex08.check_speculative_greedy(draft_rolled_back_like_the_target)
    out = capsys.readouterr().out
    assert "raised ValueError" in out and "in the draft's rollback(" in out and "cache lengths at the start" in out


def test_a_loop_that_never_ends_is_stopped_with_a_message(capsys):
    assert not ex08.check_speculative_greedy(never_ends)
    assert "the loop does not end" in capsys.readouterr().out


def test_a_state_given_to_the_wrong_model_is_named(capsys):
    ex08.check_speculative_greedy(mixes_up_the_states)
    assert "the target was given the draft's decoding state" in capsys.readouterr().out


def test_the_bug_shows_as_a_divergence_from_greedy(capsys):
    """The notebook promises a concrete case where the buggy loop's text leaves plain greedy (not a crash)."""
    ex08.check_speculative_greedy(ex08.buggy_speculative_greedy)
    out = capsys.readouterr().out
    assert "differs from plain greedy" in out and "raised" not in out
    message = diagnosis(out)  # the diagnosis first, the case after
    assert message.startswith("token ") and "(with the bundled n-gram draft, gamma 4, max_new_tokens 40" in message


def test_the_bug_hides_when_every_draft_is_accepted():
    """With a draft identical to the target, the buggy rollback is never wrong (the notebook's question)."""
    tokenizer, target = ex08.load_tokenizer(), ex08.bundled("target")
    prompt = tokenizer.encode("import os\nimport sys\n\n\ndef main(argv=None):\n    ")
    copy, _ = ex08.make_draft("copy")
    got = ex08.buggy_speculative_greedy(target, copy, prompt, 30, 4)
    assert got == generate(target, prompt, 30, SamplingParams(0)).tokens.tolist()


def test_no_caches_fails_on_the_budget_not_on_the_tokens(capsys):
    ex08.check_speculative_greedy(no_caches)
    assert "the right tokens, but the target scored" in capsys.readouterr().out


def test_the_notebook_shows_the_real_buggy_code():
    """Exercise 3 prints the function the checker runs, and its stored output is that source."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    source = inspect.getsource(ex08.buggy_speculative_greedy)
    cells = [
        cell
        for cell in notebook.cells
        if cell.cell_type == "code" and "getsource(ex08.buggy_speculative_greedy)" in cell.source
    ]
    assert len(cells) == 1
    printed = "".join(output.get("text", "") for output in cells[0].outputs)
    assert printed.rstrip("\n") == source.rstrip("\n")
