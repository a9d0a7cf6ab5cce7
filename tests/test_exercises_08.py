"""Notebook 08's exercise checkers: the reference solutions pass, realistic wrong answers and the stub fail."""

import importlib.util
import inspect
from pathlib import Path

import nbformat
import numpy as np
import pytest

from specdec import SamplingParams, generate, speculative_generate
from specdec.exercises import ex08

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


def test_accept_solution_passes():
    assert ex08.check_accept_greedy(accept_solution.accept_greedy)


@pytest.mark.parametrize(
    "wrong",
    [stub, argmin_without_all, counts_every_match, no_bonus, compares_with_the_next_choice, emits_the_rejected_draft],
)
def test_accept_rejects(wrong, capsys):
    assert not ex08.check_accept_greedy(wrong)
    assert "✗" in capsys.readouterr().out


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


def test_lengths_solution_passes():
    assert ex08.check_cache_lengths(lengths_solution.cache_lengths)


@pytest.mark.parametrize("wrong", [stub, draft_like_target, keeps_the_correction, no_rollback, draft_reads_every_draft])
def test_lengths_rejects(wrong, capsys):
    assert not ex08.check_cache_lengths(wrong)
    assert "✗" in capsys.readouterr().out


def test_lengths_message_names_the_full_accept_case(capsys):
    ex08.check_cache_lengths(draft_like_target)
    assert "every draft accepted" in capsys.readouterr().out


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


def test_rollback_solution_passes():
    assert ex08.check_speculative_greedy(rollback_solution.fixed_speculative_greedy)


def test_the_package_passes():
    def package(target, draft, prompt_tokens, max_new_tokens, gamma):
        return speculative_generate(target, draft, prompt_tokens, max_new_tokens, SamplingParams(0), gamma).tokens

    assert ex08.check_speculative_greedy(package)


@pytest.mark.parametrize(
    "wrong",
    [
        stub,
        ex08.buggy_speculative_greedy,
        draft_rolled_back_like_the_target,
        no_caches,
        overshoots,
        emits_only_accepted_drafts_as_text,
    ],
)
def test_rollback_rejects(wrong, capsys):
    assert not ex08.check_speculative_greedy(wrong)
    assert "✗" in capsys.readouterr().out


def test_the_bug_shows_as_a_divergence_from_greedy(capsys):
    """The notebook promises a concrete case where the buggy loop's text leaves plain greedy (not a crash)."""
    ex08.check_speculative_greedy(ex08.buggy_speculative_greedy)
    out = capsys.readouterr().out
    assert "differs from plain greedy" in out and "raised" not in out


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
