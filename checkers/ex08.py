"""Checkers for the exercises of notebook 08 (greedy speculative decoding).

check_accept_greedy(fn):       fn(drafts, target_argmax) -> (n_accepted, emitted)
check_cache_lengths(fn):       fn(sequence_length, gamma, n_accepted) -> (target_length, draft_length)
check_speculative_greedy(fn):  fn(target, draft, prompt_tokens, max_new_tokens, gamma) -> the new tokens

`buggy_speculative_greedy`, the loop with the rollback bug of exercise 3, lives here too, so the
notebook cannot change it by accident. The third checker runs the bundled models (about a second)
and watches both decoding states round by round: a cache one token too long or too short, in the
target or in the draft, is named with its round and lengths, even when the tokens come out right,
and a loop that crashes is reported with the round it was in and what the caches held. A loop
that hands the work to the package's `speculative_generate` or `generate` is refused.
The first checker refuses Python-level loops, also hidden in a helper; `emitted` must be an int64 array.
Every message says what is wrong first, then the case it happened on.
"""

import ast
import functools
import inspect
import textwrap

import numpy as np

import specdec
import specdec.generation
from checkers import call, located, namesakes, result_problem, show, verdict, without_input
from specdec import speculative
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


# Calls that run Python code once per element, without a `for` or `while` in the caller's source.
ITERATING_CALLS = {
    "map", "filter", "takewhile", "dropwhile", "accumulate", "groupby", "starmap", "reduce",  # builtins, itertools
    "vectorize", "frompyfunc", "apply_along_axis", "fromiter",  # numpy's Python-level loops
}  # fmt: skip


def resolve(node: ast.AST, fn):
    """The object a name or dotted name in fn's source refers to (fn's globals and closure), or None."""
    if isinstance(node, ast.Attribute):
        owner = resolve(node.value, fn)
        return getattr(owner, node.attr, None) if owner is not None else None
    if isinstance(node, ast.Name):
        closure = inspect.getclosurevars(fn).nonlocals if inspect.isfunction(fn) else {}
        scope = {**getattr(fn, "__globals__", {}), **closure}
        return scope.get(node.id)
    return None


def python_loop(fn, seen: frozenset = frozenset()) -> str | None:
    """Where fn (or a Python function it calls) loops in Python: for, while, a comprehension, recursion,
    itertools, map/zip/range/next and the like. None when there is none (also when the source is unknown)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):  # a builtin, a lambda in an odd place, source not available
        return None
    name = getattr(fn, "__name__", "?")
    where = "" if not seen else f" of `{name}`, which it calls"
    kinds = {ast.For: "a `for` loop", ast.While: "a `while` loop", ast.comprehension: "a comprehension"}
    for node in ast.walk(tree):
        for kind, loop in kinds.items():
            if isinstance(node, kind):
                line = getattr(node, "lineno", None) or getattr(node.target, "lineno", "?")
                return f"{loop} (line {line}{where or ' of the function'})"
        if isinstance(node, ast.Attribute | ast.Name):
            called = resolve(node, fn)
            module = getattr(called, "__name__", None) if inspect.ismodule(called) else None
            if module in ("itertools", "functools"):
                attr = f"`{module}.{node.attr}`" if isinstance(node, ast.Attribute) else f"`{module}`"
                return f"{attr} (line {node.lineno}{where or ' of the function'}), a Python-level iteration"
        if isinstance(node, ast.Call):
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            keyed = callee in ("min", "max", "sorted") and any(k.arg == "key" for k in node.keywords)
            if callee in ITERATING_CALLS or keyed:
                return f"`{callee}` (line {node.lineno}{where or ' of the function'}), a Python-level iteration"
            called = resolve(node.func, fn)
            if called is fn or (inspect.isfunction(called) and called in seen):
                return f"recursion (line {node.lineno}{where or ' of the function'}), a loop by another name"
            module = getattr(called, "__module__", None) or ""
            if inspect.isfunction(called) and not module.startswith("numpy") and len(seen) < 4:
                inner = python_loop(called, seen | {fn})
                if inner is not None:
                    return inner
    return None


def is_count(value) -> bool:
    """An integer (Python or numpy), not a bool or a float."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def accept_problem(got, expected_n: int, expected_emitted: list[int]) -> str | None:
    """What is wrong with one answer of accept_greedy, the diagnosis in words (None when it is right)."""
    if not (isinstance(got, tuple | list) and len(got) == 2):
        return f"expected a pair (n_accepted, emitted), got {show(got)}"
    n, emitted = got
    kind = result_problem(emitted, np.array(expected_emitted, dtype=np.int64), "tokens to emit", shape=False)
    if kind is not None and np.asarray(emitted).dtype.kind == "f":
        kind += " (np.asarray([]) is float64: give np.asarray an integer dtype)"
    try:
        same = int(n) == expected_n and [int(t) for t in np.asarray(emitted).reshape(-1)] == expected_emitted
    except (TypeError, ValueError):
        same = False
    if not same:
        return f"expected ({expected_n}, {expected_emitted}), got {show(got)}"
    if not is_count(n):
        return f"n_accepted is {n!r}, a {type(n).__name__}: a number of drafts is an integer"
    return kind


def check_accept_greedy(fn) -> bool:
    """fn(drafts, target_argmax) must return (n_accepted, emitted) with emitted = drafts[:n] + [target_argmax[n]].

    Without a Python loop: the exercise asks for whole-array numpy operations.
    """
    name = "accept_greedy"
    cases = accept_cases()
    for drafts, best in cases:
        expected_n, expected_emitted = reference_accept_greedy(drafts, best)
        got, error = call(fn, (drafts, best))
        gamma = len(np.asarray(drafts).reshape(-1))
        where = f"for drafts {show(np.asarray(drafts))} (gamma = {gamma}), target_argmax {show(np.asarray(best))}"
        if error is None:
            error = accept_problem(got, expected_n, expected_emitted)
        if error is not None:
            return verdict(name, located(error, where), len(cases))
    loop = python_loop(fn)
    if loop is not None:
        return verdict(
            name,
            f"right on all {len(cases)} cases, but it uses {loop}: the exercise asks for numpy "
            "operations on whole arrays, no Python loop (compare all drafts at once)",
            len(cases),
        )
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
                same = len(got) == 2 and tuple(int(x) for x in got) == expected
            except (TypeError, ValueError):
                same = False
            length, gamma, n = args
            note = ": every draft accepted" if n == gamma else f": draft {n} rejected, counting from 0"
            where = f"for sequence_length {length}, gamma {gamma}, n_accepted {n}{note}"
            if not same:
                error = located(f"expected (target_length, draft_length) = {expected}, got {show(got)}", where)
            elif not all(is_count(x) for x in got):
                kinds = ", ".join(type(x).__name__ for x in got)
                error = located(f"the right values, but as {kinds}: a number of tokens is an integer", where)
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


def divergence(tokenizer, tokens: np.ndarray, expected: np.ndarray) -> tuple[str, int]:
    """Where the learner's tokens leave plain greedy's, with the text around that place; and that position."""
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
    ), first


class Runaway(Exception):
    """Raised by the watch when a loop makes more model calls than any correct one could."""


def package_loops(fn) -> dict:
    """The package's generation loops (and the notebook's copies, any alias): the exercise is to fix the given loop."""
    return namesakes(fn, ("speculative_generate", "generate"), specdec, speculative, specdec.generation)


FIX_THE_LOOP = (
    "the exercise is to fix the one wrong line of buggy_speculative_greedy: copy that loop, change one rollback,"
    " and call no generation loop of specdec"
)


class RoleState:
    """A decoding state handed to the learner's loop: the model's own state, plus the tokens it holds and its role."""

    def __init__(self, inner, role: str, watch: "Watch"):
        self.inner, self.role, self.watch = inner, role, watch
        self.tokens: list[int] = []  # what this state holds, token by token, to compare with the text

    @property
    def length(self) -> int:
        return self.inner.length

    def rollback(self, length) -> None:
        self.watch.event = f"the {self.role}'s rollback({length!r}) when its cache held {self.inner.length} tokens"
        self.inner.rollback(length)
        del self.tokens[self.inner.length :]


class Watched(Wrapped):
    """One role (target or draft) of a watched generation: its states record what they hold, the watch each call."""

    def __init__(self, model, role: str, watch: "Watch"):
        super().__init__(model, model.name)
        self.role, self.watch = role, watch

    def start(self) -> RoleState:
        return RoleState(self.model.start(), self.role, self.watch)

    def score(self, tokens, state) -> np.ndarray:
        if not isinstance(state, RoleState) or state.role != self.role:
            given = f"the {state.role}'s decoding state" if isinstance(state, RoleState) else type(state).__name__
            raise TypeError(f"the {self.role} was given {given}: each model scores with a state from its own start()")
        self.watch.before_score(self.role, state, np.asarray(tokens).size)
        logits = self.model.score(tokens, state.inner)  # (n, V)
        state.tokens += np.asarray(tokens).astype(np.int64).reshape(-1).tolist()
        if self.role == "target":
            self.watch.target_calls += 1
        return logits


class Watch:
    """What a correct loop's caches hold at the start of each round, and the first cache found otherwise.

    A round ends with the target's call (one per round), so round k starts after the (k - 1)-th
    target call: the draft's first call of the round (its catch-up) and the target's call are
    where the two caches are compared with the reference loop's, token by token.
    """

    def __init__(self, text: list[int], rounds: list[tuple[int, int, int]], max_new_tokens: int, gamma: int):
        self.text, self.rounds = text, rounds  # prompt + plain greedy's tokens; (L, g, n) of each reference round
        self.expected = [{"target": 0, "draft": 0}]  # at the start of round 1, 2, ...
        for length, g, n in rounds:
            target, draft = reference_cache_lengths(length, g, n) if g else (length + n, self.expected[-1]["draft"])
            self.expected.append({"target": target, "draft": draft})
        self.max_target_calls = max_new_tokens + 1  # every round emits at least one token
        self.max_draft_calls = (gamma + 1) * (max_new_tokens + 1)
        self.target_calls = self.draft_calls = self.scored = 0
        self.round, self.draft_seen = 1, -1  # the round in progress; the last round whose draft catch-up was seen
        self.seen: dict[int, dict[str, int]] = {}  # round -> {role: cache length at the start of that round}
        self.first_wrong = None  # (round, role, tokens held, expected length) of the first wrong cache
        self.event = "before its first model call"

    def before_score(self, role: str, state: RoleState, n: int) -> None:
        self.round = self.target_calls + 1
        self.event = f"the {role}'s score call on {n} tokens when its cache held {state.length}"
        if role == "target":
            self.scored += n
            if self.target_calls >= self.max_target_calls:
                raise Runaway(f"more than {self.max_target_calls} target calls")
            self.observe(role, state)
        else:
            self.draft_calls += 1
            if self.draft_calls > self.max_draft_calls:
                raise Runaway(f"more than {self.max_draft_calls} draft calls")
            if self.draft_seen != self.round:  # the draft's first call of this round: its catch-up
                self.draft_seen = self.round
                self.observe(role, state)

    def observe(self, role: str, state: RoleState) -> None:
        k = self.round
        self.seen.setdefault(k, {})[role] = state.length
        if self.first_wrong is not None or k > len(self.expected):
            return
        expected = self.expected[k - 1][role]
        if state.length != expected or state.tokens != self.text[: state.length]:
            self.first_wrong = (k, role, list(state.tokens), expected)

    def emitting_round(self, position: int) -> int:
        """The reference round that emits text position `position` (the last round if it is beyond the text)."""
        for k, (length, _, n) in enumerate(self.rounds, start=1):
            if position < length + n + 1:
                return k
        return len(self.rounds)

    def describe_wrong(self, tokenizer) -> str:
        k, role, held, expected = self.first_wrong
        if k == 1:
            why = "a fresh state: nothing read yet"
        elif role == "target":
            why = f"the text and the drafts accepted in round {k - 1}"
        else:
            why = f"the text and the drafts accepted in round {k - 1}, as far as it read them: never its last draft"
        said = f"at the start of round {k} the {role}'s cache held {len(held)} tokens, expected {expected} ({why})"
        if len(held) > expected:
            return said + f": {len(held) - expected} too many"
        if len(held) < expected:
            return said + f": {expected - len(held)} too few"
        position = next(i for i, (a, b) in enumerate(zip(held, self.text, strict=False)) if a != b)
        return said + (
            f", but position {position} holds {label(tokenizer, held[position])} where the text has "
            f"{label(tokenizer, self.text[position])}"
        )

    def caches_at(self, k: int) -> str:
        seen = self.seen.get(k, {})
        parts = [
            f"{role} {seen[role]} (expected {self.expected[k - 1][role]})"
            for role in ("target", "draft")
            if role in seen and k <= len(self.expected)
        ]
        return f"cache lengths at the start of round {k}: " + ", ".join(parts) if parts else ""


def label(tokenizer, token: int) -> str:
    try:
        return repr(tokenizer.decode([token]))
    except ValueError:
        return f"token {token}"


def reference_rounds(target, draft, prompt: list[int], max_new_tokens: int, gamma: int) -> list[tuple[int, int, int]]:
    """(text length L, drafts g, accepted n) of each round of a correct greedy loop (the exercise's fixed loop)."""
    sequence = list(prompt)
    end = len(sequence) + max_new_tokens
    target_state, draft_state = target.start(), draft.start()
    rounds = []
    while len(sequence) < end:
        g = min(gamma, end - len(sequence) - 1)
        drafts = []
        if g > 0:
            logits = draft.score(sequence[draft_state.length :], draft_state)[-1]  # (V,)
            for i in range(g):
                drafts.append(int(np.argmax(logits)))
                if i < g - 1:
                    logits = draft.score(drafts[-1:], draft_state)[0]  # (V,)
        best = np.argmax(target.score(sequence[target_state.length :] + drafts, target_state)[-(g + 1) :], axis=-1)
        n = next((i for i in range(g) if drafts[i] != best[i]), g)
        rounds.append((len(sequence), g, n))
        target_state.rollback(len(sequence) + n)
        draft_state.rollback(min(draft_state.length, len(sequence) + n))
        sequence += drafts[:n] + [int(best[n])]
    return rounds


@functools.cache
def speculative_case(index: int) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int, int]]]:
    """(prompt, plain greedy's new tokens, the reference rounds) of SPECULATIVE_CASES[index], computed once."""
    kind, text, max_new_tokens, gamma = SPECULATIVE_CASES[index]
    prompt = np.array(load_tokenizer().encode(text))  # (P,)
    target = bundled("target")
    expected = generate(target, prompt, max_new_tokens, SamplingParams(0)).tokens  # (max_new_tokens,)
    rounds = reference_rounds(target, make_draft(kind)[0], prompt.tolist(), max_new_tokens, gamma)
    return prompt, expected, rounds


def check_speculative_greedy(fn) -> bool:
    """fn(target, draft, prompt_tokens, max_new_tokens, gamma) must return plain greedy's tokens, using the caches.

    Both caches must hold, at the start of every round, exactly what a correct loop's hold: a
    rollback one token off in either direction, in either model, is a counterexample even when
    the tokens come out right. A loop that raises is reported with its round and cache lengths.
    """
    name = "speculative_greedy"
    tokenizer = load_tokenizer()
    loops = package_loops(fn)
    for index, (kind, text, max_new_tokens, gamma) in enumerate(SPECULATIVE_CASES):
        draft, description = make_draft(kind)
        prompt, expected, rounds = speculative_case(index)
        watch = Watch(prompt.tolist() + expected.tolist(), rounds, max_new_tokens, gamma)
        target_role, draft_role = Watched(bundled("target"), "target", watch), Watched(draft, "draft", watch)
        where = f"with {description}, gamma {gamma}, max_new_tokens {max_new_tokens}, prompt ending {text[-24:]!r}"
        got, error = call(fn, (target_role, draft_role, prompt, max_new_tokens, gamma), refused=loops, why=FIX_THE_LOOP)
        if error is not None and error.startswith("raised"):
            message = without_input(error).removeprefix("raised ")
            if message.startswith("Runaway: "):
                error = (
                    f"stopped in round {watch.round} after {message.removeprefix('Runaway: ')} for "
                    f"{max_new_tokens} new tokens: every round emits at least one token, so the loop does not end"
                )
            else:
                error = f"round {watch.round} raised {message}, in {watch.event}"
            if watch.first_wrong is not None:
                error += f"; {watch.describe_wrong(tokenizer)}"
            elif watch.caches_at(watch.round):
                error += f"; the caches were right until then ({watch.caches_at(watch.round)})"
        if error is None:
            try:
                tokens = np.asarray(got, dtype=np.int64).reshape(-1)
            except (TypeError, ValueError, OverflowError):
                tokens = None
            if tokens is None:
                error = f"expected a list of token ids, got {show(got)}"
            elif tokens.size != expected.size or not np.array_equal(tokens, expected):
                error, first = divergence(tokenizer, tokens, expected)
                wrong = watch.first_wrong
                if wrong is not None and wrong[0] <= watch.emitting_round(prompt.size + first):
                    error += f"; before that, {watch.describe_wrong(tokenizer)}"
            elif watch.scored > prompt.size + (gamma + 1) * max_new_tokens:
                error = (
                    f"the right tokens, but the target scored {watch.scored} positions for "
                    f"{max_new_tokens} new tokens after a {prompt.size}-token prompt: feed each model only what it "
                    f"has not seen (rollback), instead of re-scoring the sequence"
                )
            elif watch.first_wrong is not None:
                error = f"the right tokens, but {watch.describe_wrong(tokenizer)}"
        if error is not None:
            return verdict(name, located(error, where), len(SPECULATIVE_CASES))
    return verdict(name, None, len(SPECULATIVE_CASES))
