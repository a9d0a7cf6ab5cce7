"""One policy for every checker (checkers/__init__.py): each mistake below is refused, by name, diagnosis first.

For every checker, the reference solution is turned into wrong answers that keep its values right:

- it changes an input array in place after computing its answer;
- it returns a list where an array is asked;
- it returns an array of another dtype than the one asked;
- it draws from a generator of its own instead of the `rng` it is given.

Each must be refused with a message that names the mistake in its first words. And while a
checker runs, `specdec` and numpy are exactly as they were: a learner's function that looks at
them sees the package's own functions (nothing is swapped to catch a call of the reference).
"""

import functools
import inspect
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from helpers import diagnosis, load_solution

import checkers
from checkers import ex00, ex01, ex02, ex03, ex04, ex05, ex06, ex07, ex08, ex09, ex10, ex11, ex12

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Policy:
    """What a checker's exercise asks: which arguments are arrays the function must leave alone, and so on."""

    checker: object
    solution: tuple[str, str]  # (solutions/<file>.py, function name)
    inputs: tuple[int, ...] = ()  # positions of the array (or list) arguments it must not change
    result: str | None = None  # "array": the result is an array; "pair": a tuple whose item `item` is one
    item: int = 0
    rng: int | None = None  # position of the `rng` argument, if any
    other_dtypes: tuple = field(default=())  # dtypes the statement allows besides the reference's


POLICIES = [
    Policy(ex00.check_normalise, ("ex00_warm_up", "normalise"), (0,), "array"),
    Policy(ex01.check_stable_softmax, ("ex01_stable_softmax", "stable_softmax"), (0,), "array"),
    Policy(ex01.check_log_softmax, ("ex01_log_softmax", "stable_log_softmax"), (0,), "array"),
    Policy(ex01.check_fixed_softmax, ("ex01_fixed_softmax", "fixed_softmax"), (0,), "array"),
    Policy(ex01.check_entropy_bits, ("ex01_entropy_bits", "entropy_bits"), (0,), "array", other_dtypes=("f",)),
    Policy(ex02.check_draw_with_u, ("ex02_draw_with_u", "draw_with_u"), (0,)),
    Policy(ex02.check_total_variation, ("ex02_total_variation", "best_event"), (0, 1), "array"),
    Policy(ex02.check_counterexample, ("ex02_find_counterexample", "find_counterexample")),
    Policy(ex02.check_which_is_wrong, ("ex02_which_is_wrong", "which_is_wrong"), (2,), rng=3),
    Policy(ex03.check_top_k_filter, ("ex03_top_k", "top_k_keep_ties"), (0,), "array"),
    Policy(ex03.check_kth_largest, ("ex03_top_k", "kth_largest_value"), (0,), "array"),
    Policy(ex03.check_top_k_test, ("ex03_top_k", "top_k_result_ok"), (0, 2)),
    Policy(ex04.check_nucleus_keep, ("ex04_top_p", "nucleus_keep"), (0,), "array"),
    Policy(ex04.check_fixed_nucleus_filter, ("ex04_top_p", "fixed_nucleus_filter"), (0,), "array"),
    Policy(ex05.check_pipeline_probs, ("ex05_pipeline_probs", "pipeline_probs"), (0,), "array"),
    Policy(ex05.check_fixed_top_k_top_p, ("ex05_fixed_top_k_top_p", "fixed_top_k_top_p"), (0,), "array"),
    Policy(ex05.check_which_order, ("ex05_which_order", "which_order"), (0, 2)),
    Policy(ex06.check_bits_and_perplexity, ("ex06_bits_and_perplexity", "bits_and_perplexity"), (0,)),
    Policy(ex06.check_generate_tokens, ("ex06_generate", "generate_tokens"), (1,), rng=4),
    Policy(ex06.check_bigram_probs, ("ex06_bigram", "bigram_probs"), (0,), "array"),
    Policy(ex06.check_cached_score, ("ex06_cached_score", "cached_score"), (2,), "array"),
    Policy(ex07.check_tokens_per_call, ("ex07_tokens_per_call", "tokens_per_call")),
    Policy(ex07.check_best_gamma, ("ex07_best_gamma", "best_gamma")),
    Policy(ex07.check_break_even_alpha, ("ex07_break_even_alpha", "break_even_alpha")),
    Policy(ex08.check_accept_greedy, ("ex08_accept_greedy", "accept_greedy"), (0, 1), "pair", item=1),
    Policy(ex08.check_cache_lengths, ("ex08_cache_lengths", "cache_lengths")),
    Policy(ex08.check_speculative_greedy, ("ex08_rollback", "fixed_speculative_greedy"), (2,)),
    Policy(ex09.check_residual_distribution, ("ex09_residual_distribution", "residual_distribution"), (0, 1), "array"),
    Policy(ex09.check_accepts, ("ex09_accepts", "accepts")),
    Policy(ex09.check_last_token, ("ex09_last_token", "last_token"), (0, 1, 2), "array"),
    Policy(
        ex09.check_speculative_verify, ("ex09_speculative_verify", "my_speculative_verify"), (0, 1, 2), "pair", rng=3
    ),
    Policy(ex10.check_estimate_alpha, ("ex10_estimate_alpha", "estimate_alpha"), (0, 1)),
    Policy(
        ex10.check_acceptance_per_position, ("ex10_acceptance_per_position", "acceptance_per_position"), (0, 1), "array"
    ),
    Policy(ex10.check_best_gamma_by_position, ("ex10_best_gamma_by_position", "best_gamma_by_position"), (0,)),
    Policy(ex11.check_block_weights, ("ex11_block_weights", "my_block_weights"), (0, 1, 2), "pair"),
    Policy(ex12.check_attention_mask, ("ex12_attention_mask", "my_attention_mask"), (0, 1), "array"),
    Policy(ex12.check_draw_rows, ("ex12_draw_rows", "my_draw_rows"), (0,), "array"),
]
IDS = [policy.checker.__name__ for policy in POLICIES]


def every_checker() -> list:
    """Every check_* function of every exercise module: the registry above must list them all."""
    modules = [ex00, ex01, ex02, ex03, ex04, ex05, ex06, ex07, ex08, ex09, ex10, ex11, ex12]
    return [
        function
        for module in modules
        for name, function in vars(module).items()
        if name.startswith("check_")
        and inspect.isfunction(function)
        and function.__module__ == module.__name__
        and len(inspect.signature(function).parameters) == 1  # a checker takes the learner's function, only
    ]


def test_every_checker_is_under_the_policy():
    listed = {policy.checker for policy in POLICIES}
    missing = [f"{c.__module__}.{c.__name__}" for c in every_checker() if c not in listed]
    assert not missing, f"checkers missing from POLICIES: {missing}"


def solution_of(policy: Policy):
    return getattr(load_solution(policy.solution[0]), policy.solution[1])


def run(checker, fn, capsys) -> str:
    with np.errstate(all="ignore"):
        passed = checker(fn)
    out = capsys.readouterr().out
    assert not passed, f"{checker.__name__} accepted a wrong answer:\n{out}"
    return out


def changed(value):
    """Change an array or a list in place, visibly (NaN and -inf entries too)."""
    if isinstance(value, list):
        value.append(value[-1] if value else 0)
    elif isinstance(value, np.ndarray) and value.size:
        flat = value.reshape(-1)
        if value.dtype == bool:
            flat[0] = not flat[0]
        elif value.dtype.kind in "iu":
            flat[0] = flat[0] + 1
        else:
            flat[0] = 0.5 if flat[0] != 0.5 else 0.25


@pytest.mark.parametrize("policy", [p for p in POLICIES if p.inputs], ids=lambda p: p.checker.__name__)
def test_a_function_that_changes_its_input_is_refused(policy, capsys):
    solution = solution_of(policy)

    @functools.wraps(solution)
    def changes_its_input(*args):
        answer = solution(*args)
        for i in policy.inputs:
            changed(args[i])
        return answer

    message = diagnosis(run(policy.checker, changes_its_input, capsys))
    assert re.match(r"your function changed its input `\w+` in place", message), message


ARRAY_RESULTS = [p for p in POLICIES if p.result is not None]
ARRAY_IDS = [p.checker.__name__ for p in ARRAY_RESULTS]


def as_list(policy: Policy, answer):
    if policy.result == "array":
        return np.asarray(answer).tolist()
    items = list(answer)
    items[policy.item] = np.asarray(items[policy.item]).tolist()
    return tuple(items)


@pytest.mark.parametrize("policy", ARRAY_RESULTS, ids=ARRAY_IDS)
def test_a_list_where_an_array_is_asked_is_refused(policy, capsys):
    solution = solution_of(policy)

    @functools.wraps(solution)
    def returns_a_list(*args):
        return as_list(policy, solution(*args))

    message = diagnosis(run(policy.checker, returns_a_list, capsys))
    assert message.startswith("your function returned a list where a numpy array is asked"), message


def other_dtype(array: np.ndarray, allowed: tuple) -> np.dtype:
    if array.dtype == bool:
        return np.dtype(np.int8)
    if array.dtype.kind in "iu":
        return np.dtype(np.int32) if array.dtype != np.int32 else np.dtype(np.int64)
    if "f" in allowed:
        return np.dtype(np.int64)  # any float dtype is allowed: an integer one is not
    return np.dtype(np.float32) if array.dtype != np.float32 else np.dtype(np.float64)


@pytest.mark.parametrize("policy", ARRAY_RESULTS, ids=ARRAY_IDS)
def test_a_result_of_the_wrong_dtype_is_refused(policy, capsys):
    solution = solution_of(policy)
    seen = []

    @functools.wraps(solution)
    def returns_another_dtype(*args):
        answer = solution(*args)
        array = np.asarray(answer if policy.result == "array" else answer[policy.item])
        wrong = array.astype(other_dtype(array, policy.other_dtypes))
        seen.append(wrong.dtype.name)
        if policy.result == "array":
            return wrong
        items = list(answer)
        items[policy.item] = wrong
        return tuple(items)

    message = diagnosis(run(policy.checker, returns_another_dtype, capsys))
    assert seen and message.startswith(f"your function returned {seen[0]} "), message


@pytest.mark.parametrize("policy", [p for p in POLICIES if p.rng is not None], ids=lambda p: p.checker.__name__)
def test_a_function_that_draws_from_its_own_generator_is_refused(policy, capsys):
    solution = solution_of(policy)

    @functools.wraps(solution)
    def draws_elsewhere(*args):
        args = list(args)
        if isinstance(args[policy.rng], np.random.Generator):
            args[policy.rng] = np.random.default_rng()  # unseeded: not the caller's generator
        return solution(*args)

    message = diagnosis(run(policy.checker, draws_elsewhere, capsys))
    named = ("draws from a generator other than the given `rng`", "never used the `rng` it was given")
    assert message.startswith("your function ") and any(words in message.split(":")[0] for words in named), message


# --- nothing is swapped while a checker runs ------------------------------------------------------


def package_snapshot() -> dict:
    """Every attribute of every loaded specdec module, and numpy's top level, by identity."""
    modules = [m for name, m in sys.modules.items() if name == "specdec" or name.startswith("specdec.")]
    snapshot = {(module.__name__, key): id(value) for module in modules for key, value in vars(module).items()}
    snapshot |= {("numpy", key): id(value) for key, value in vars(np).items()}
    snapshot |= {("ndarray", key): id(value) for key, value in vars(np.ndarray).items()}
    return snapshot


@pytest.mark.parametrize("policy", POLICIES, ids=IDS)
def test_a_checker_leaves_specdec_and_numpy_as_they_are_while_it_runs(policy, capsys):
    before = package_snapshot()
    solution = solution_of(policy)
    during = []

    @functools.wraps(solution)
    def looks_around(*args):
        during.append(package_snapshot())
        return solution(*args)

    with np.errstate(all="ignore"):
        policy.checker(looks_around)
    capsys.readouterr()
    assert during, f"{policy.checker.__name__} never called the function"
    swapped = sorted({key for snapshot in during for key, value in snapshot.items() if before.get(key) != value})
    assert not swapped, f"{policy.checker.__name__} swapped {swapped[:5]} while it ran"
    assert package_snapshot() == before


def test_specdec_holds_no_checker_and_never_imports_the_course_side_package():
    assert not (ROOT / "specdec" / "exercises").exists()
    for path in (ROOT / "specdec").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(from|import) checkers\b", text, re.MULTILINE), path
        assert "setprofile" not in text and "settrace" not in text, f"{path}: the library watches no calls"
    assert checkers.__file__.startswith(str(ROOT / "checkers"))
