"""Solution to notebook 06, exercise 1: bits per token and perplexity from log-probabilities.

A model's log-probabilities come in natural logarithms (log_softmax uses np.log). Bits are
base-2 logarithms, so divide by ln 2. Average the *log*-probabilities, not the probabilities:
the mean of -log2 p is the cross-entropy, the number of bits per token an ideal coder driven
by the model would spend on this text. Perplexity is 2 to that power (equivalently
exp(mean of -ln p)): the size of a uniform choice that would be just as surprising.
A single token with probability 0 (log-probability -inf) makes both infinite, as it should.
"""

import math

import numpy as np


def bits_and_perplexity(log_probs):
    """Mean -log2 p over every entry of `log_probs` (natural logs), and the perplexity 2 ** bits."""
    log_probs = np.asarray(log_probs, dtype=np.float64)  # (...,) one entry per scored token
    bits = -log_probs.mean() / math.log(2)  # nats -> bits
    return float(bits), float(2.0**bits)
