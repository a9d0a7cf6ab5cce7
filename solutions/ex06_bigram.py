"""Solution to notebook 06, exercise 3: a bigram model by hand, with add-one smoothing.

Count each pair (a, b) of neighbouring tokens, add 1 to every count (so a pair never seen
still gets a little probability), and divide each row by its own total. The total of row a is
the number of times a was *followed by something*, plus V for the added ones. That is not the
number of times a occurs: the very last token of the text is followed by nothing, and counting
it would leave its row summing to less than 1.
"""

import numpy as np


def bigram_probs(tokens, vocab_size):
    """P[a, b] = (count(a then b) + 1) / (count(a then anything) + vocab_size), shape (V, V), float64."""
    tokens = np.asarray(tokens, dtype=np.int64)  # (n,)
    counts = np.zeros((vocab_size, vocab_size))  # (V, V) [a, b] = times token a is followed by token b
    np.add.at(counts, (tokens[:-1], tokens[1:]), 1)  # unbuffered: repeated pairs all count
    smoothed = counts + 1  # (V, V) add-one (Laplace) smoothing
    return smoothed / smoothed.sum(axis=1, keepdims=True)  # each row sums to 1
