"""Solution to notebook 02, exercise 4: use a chi-square test to find the wrong sampler."""

import numpy as np

from specdec.drawing import chi_square_test


def which_is_wrong(sampler_a, sampler_b, probs, rng, n=100_000) -> str:
    """Return "a" or "b": the sampler whose draws fit `probs` worse.

    Draw n tokens from each sampler, count them, and run Pearson's chi-square test against
    `probs`. An exact sampler gives a p-value spread uniformly on [0, 1]; a wrong one, with
    enough draws, a p-value near 0. So the smaller p-value points at the wrong sampler. With
    n = 100 000 draws, a bias of 1-2% in total variation is found reliably; with a few hundred
    draws it is not (the test has no power), which is why n matters.
    """
    probs = np.asarray(probs, dtype=np.float64)  # (V,)
    p_values = []
    for sampler in (sampler_a, sampler_b):
        tokens = sampler(probs, n, rng)  # (n,)
        counts = np.bincount(tokens, minlength=probs.size)  # (V,)
        p_values.append(chi_square_test(counts, probs).p_value)
    return "a" if p_values[0] < p_values[1] else "b"
