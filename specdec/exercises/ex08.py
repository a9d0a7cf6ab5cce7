"""Checkers for the exercises of notebook 08 (greedy speculative decoding).

check_accept_greedy(fn):       fn(drafts, target_argmax) -> (n_accepted, emitted)
check_cache_lengths(fn):       fn(sequence_length, gamma, n_accepted) -> (target_length, draft_length)
check_speculative_greedy(fn):  fn(target, draft, prompt_tokens, max_new_tokens, gamma) -> the new tokens

`buggy_speculative_greedy`, the loop with the rollback bug of exercise 3, lives here too, so the
notebook cannot change it by accident. The third checker runs the bundled models (about a second).
"""

import functools

import numpy as np

from specdec.exercises import call, show, verdict
from specdec.generation import generate
from specdec.models import load_model, load_tokenizer
from specdec.pipeline import SamplingParams

# --- Exercise 1: the greedy acceptance rule, without a loop -----------------------------------


def reference_accept_greedy(drafts, target_argmax) -> tuple[int, list[int]]:
    """(number of drafts accepted, tokens emitted): the matching prefix plus the target's own next token."""
    drafts = [int(t) for t in np.asarray(drafts).reshape(-1)]
    best = [int(t) for t in np.asarray(target_argmax).reshape(-1)]
    n = 0
    while n < len(drafts) and drafts[n] == best[n]:
        n += 1
    return n, drafts[:n] + [best[n]]


def accept_cases() -> list[tuple]:
    rng = np.random.default_rng(80)
    long_drafts = rng.integers(3, 98, 8)  # (8,)
    long_best = np.append(long_drafts, 17)  # (9,) every draft matches ...
    long_best[5] = (long_best[5] + 1) % 98  # ... except the sixth
    return [
        ([5, 7, 9], [5, 7, 9, 2]),  # every draft accepted: three drafts and the bonus token
        ([5, 7, 9], [4, 7, 9, 2]),  # the first draft rejected: only the target's own token
        ([5, 7, 9], [5, 8, 9, 2]),  # rejected in the middle: later matches do not count
        ([5, 7, 9], [5, 7, 1, 2]),  # the last draft rejected
        ([3], [3, 6]),  # gamma = 1, accepted
        ([3], [4, 6]),  # gamma = 1, rejected
        ([], [8]),  # gamma = 0: nothing to check, the target's token
        ([2, 2, 2, 2], [2, 2, 2, 2, 2]),  # repeated tokens
        ([7, 9, 2], [5, 7, 9, 2]),  # the drafts match the target's choices one position late: no match at all
        ([0, 0], [0, 1, 3]),  # token 0 (END) is a token like any other
        (np.array([5, 7, 9], dtype=np.uint8), np.array([5, 7, 9, 4])),  # arrays, small unsigned ids
        (long_drafts, long_best),
        (long_drafts, np.append(long_drafts, 17)),
    ]


def check_accept_greedy(fn) -> bool:
    """fn(drafts, target_argmax) must return (n_accepted, emitted) with emitted = drafts[:n] + [target_argmax[n]]."""
    name = "accept_greedy"
    cases = accept_cases()
    for drafts, best in cases:
        got, error = call(fn, (drafts, best))
        if error is None:
            expected_n, expected_emitted = reference_accept_greedy(drafts, best)
            where = f"for drafts {show(np.asarray(drafts))}, target_argmax {show(np.asarray(best))}"
            if not (isinstance(got, tuple | list) and len(got) == 2):
                error = f"{where} expected a pair (n_accepted, emitted), got {show(got)}"
            else:
                n, emitted = got
                try:
                    emitted = [int(t) for t in np.asarray(emitted).reshape(-1)]
                    same = int(n) == expected_n and emitted == expected_emitted
                except (TypeError, ValueError):
                    same = False
                if not same:
                    error = f"{where} expected ({expected_n}, {expected_emitted}), got {show(got)}"
        if error is not None:
            return verdict(name, error, len(cases))
    return verdict(name, None, len(cases))


# --- Exercise 2: the two cache lengths after a round -------------------------------------------


def reference_cache_lengths(sequence_length: int, gamma: int, n_accepted: int) -> tuple[int, int]:
    """Tokens each model has seen after the rollbacks that end a round of `speculative_generate`.

    At the start of the round both models catch up on the sequence (sequence_length tokens).
    The draft then scores its first gamma - 1 drafts (the last one is never scored: nobody needs
    the token after it), and the target scores all gamma drafts. Both keep the sequence and the
    accepted drafts, sequence_length + n_accepted tokens, but the draft cannot keep a token it
    never saw: after a fully accepted round it has seen one token less.
    """
    kept = sequence_length + n_accepted
    return kept, min(sequence_length + gamma - 1, kept)


def cache_cases() -> list[tuple]:
    return [
        (64, 4, 2),  # rejected in the middle
        (64, 4, 0),  # the first draft rejected
        (64, 4, 3),  # the last draft rejected
        (64, 4, 4),  # every draft accepted: the draft has not seen its last drafted token
        (64, 1, 0),
        (64, 1, 1),  # gamma = 1, accepted: the draft saw none of its drafts
        (10, 2, 1),
        (100, 8, 8),
        (100, 8, 7),
        (1, 5, 5),  # a one-token prompt
    ]


def check_cache_lengths(fn) -> bool:
    """fn(sequence_length, gamma, n_accepted) must return (target_length, draft_length) after the round's rollbacks."""
    name = "cache_lengths"
    cases = cache_cases()
    for args in cases:
        got, error = call(fn, args)
        if error is None:
            expected = reference_cache_lengths(*args)
            try:
                same = tuple(int(x) for x in got) == expected
            except (TypeError, ValueError):
                same = False
            if not same:
                length, gamma, n = args
                note = " (every draft accepted)" if n == gamma else f" (draft {n + 1} rejected)"
                error = (
                    f"for sequence_length {length}, gamma {gamma}, n_accepted {n}{note}: "
                    f"expected (target_length, draft_length) = {expected}, got {show(got)}"
                )
        if error is not None:
            return verdict(name, error, len(cases))
    return verdict(name, None, len(cases))


# --- Exercise 3: spot the bug in a rollback -----------------------------------------------------


def buggy_speculative_greedy(target, draft, prompt_tokens, max_new_tokens, gamma):
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
        target_cache.rollback(min(target_cache.length, len(sequence) + n + 1))  # the accepted drafts and its own token
        draft_cache.rollback(min(draft_cache.length, len(sequence) + n))
        sequence += emitted
        pending = emitted[-1:]
    return sequence[end - max_new_tokens :]


class Wrapped:
    """A model that passes everything through to another one; subclasses change `score`."""

    def __init__(self, model, name: str):
        self.model, self.name = model, name
        self.vocab_size, self.max_context = model.vocab_size, model.max_context

    def start(self):
        return self.model.start()

    def score(self, tokens, state) -> np.ndarray:
        return self.model.score(tokens, state)


class Contrarian(Wrapped):
    """A draft that always guesses wrong: the target's logits shifted by one token (its argmax never matches)."""

    def __init__(self, model):
        super().__init__(model, "contrarian")

    def score(self, tokens, state) -> np.ndarray:
        return np.roll(self.model.score(tokens, state), 1, axis=-1)  # (n, V)


class Counting(Wrapped):
    """A model that counts the positions it is asked to score, to tell using the caches from re-scoring."""

    def __init__(self, model):
        super().__init__(model, model.name)
        self.scored = 0

    def score(self, tokens, state) -> np.ndarray:
        self.scored += np.asarray(tokens).size
        return self.model.score(tokens, state)


@functools.cache
def bundled(name: str):
    return load_model(name)


def make_draft(kind: str):
    """The draft for a case (model objects are shared: each generation makes its own states), and its description."""
    target = bundled("target")
    if kind == "ngram":
        return bundled("draft"), "the bundled n-gram draft"
    if kind == "copy":  # the very same object in both roles: each role has its own decoding state
        return target, "the target itself as the draft (every draft accepted)"
    return Contrarian(target), "a contrarian draft (its first guess is always rejected)"


SPECULATIVE_CASES = [  # (draft, prompt, max_new_tokens, gamma)
    ("ngram", "class Stack:\n    def __init__(self, items=None):\n        self.", 40, 4),
    ("copy", "import os\nimport sys\n\n\ndef main(argv=None):\n    if argv is None:\n        ", 30, 3),
    ("contrarian", "    for key, value in sorted(mapping.items()):\n        if ", 20, 2),
    ("ngram", "def read_lines(path):\n    with open(path) as f:\n        return ", 25, 1),
    ("ngram", "        return self.", 7, 6),  # exactly gamma + 1 tokens: one round, every draft checked
    ("copy", "        return self.", 9, 4),  # two fully accepted rounds, nothing left for a third
    ("ngram", "x = ", 1, 4),  # one token: no drafts at all
    ("ngram", "x = ", 0, 4),  # nothing to generate
    ("ngram", "    def __repr__(self):\n        return '%s(%r)' % (", 50, 8),
]


def divergence(tokenizer, tokens: np.ndarray, expected: np.ndarray) -> str:
    """Where the learner's tokens leave plain greedy's, with the text around that place."""
    common = min(tokens.size, expected.size)
    mismatch = np.flatnonzero(tokens[:common] != expected[:common])
    first = int(mismatch[0]) if mismatch.size else common
    start = max(0, first - 12)

    def text(ids: np.ndarray) -> str:
        try:
            return repr(tokenizer.decode(ids[start : first + 8]))
        except ValueError:  # not token ids at all
            return show(ids[start : first + 8])

    return (
        f"token {first} differs from plain greedy (you returned {tokens.size} tokens, greedy {expected.size}): "
        f"greedy continues {text(expected)}, yours {text(tokens)}"
    )


def check_speculative_greedy(fn) -> bool:
    """fn(target, draft, prompt_tokens, max_new_tokens, gamma) must return plain greedy's tokens, using the caches."""
    name = "speculative_greedy"
    tokenizer = load_tokenizer()
    target = bundled("target")
    for kind, text, max_new_tokens, gamma in SPECULATIVE_CASES:
        draft, description = make_draft(kind)
        prompt = np.array(tokenizer.encode(text))  # (P,)
        counted = Counting(target)
        where = f"with {description}, gamma {gamma}, max_new_tokens {max_new_tokens}, prompt ending {text[-24:]!r}"
        got, error = call(fn, (counted, draft, prompt, max_new_tokens, gamma))
        if error is not None and error.startswith("raised"):
            error = error.split(" for input ")[0] + f" ({where})"  # the models' reprs say nothing useful
        if error is None:
            expected = generate(target, prompt, max_new_tokens, SamplingParams(0)).tokens  # (max_new_tokens,)
            try:
                tokens = np.asarray(got, dtype=np.int64).reshape(-1)
            except (TypeError, ValueError):
                tokens = None
            if tokens is None:
                error = f"{where}: expected a list of token ids, got {show(got)}"
            elif tokens.size != expected.size or not np.array_equal(tokens, expected):
                error = f"{where}: {divergence(tokenizer, tokens, expected)}"
            elif counted.scored > prompt.size + (gamma + 1) * max_new_tokens:
                error = (
                    f"{where}: the right tokens, but the target scored {counted.scored} positions for "
                    f"{max_new_tokens} new tokens after a {prompt.size}-token prompt: feed each model only what it "
                    f"has not seen (rollback), instead of re-scoring the sequence"
                )
        if error is not None:
            return verdict(name, error, len(SPECULATIVE_CASES))
    return verdict(name, None, len(SPECULATIVE_CASES))
