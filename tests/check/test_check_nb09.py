"""Notebook 09's checkers: their references are right. (tests/check/test_check_exercises.py runs
every checker through the same solutions, in-place versions, mistakes and hostile answers.)"""

import numpy as np

from minitf.check.nb09 import POINTER_GRADIENT, REFERENT_RULE
from minitf.tasks import referent


def test_the_rule_reference_agrees_with_the_labels():
    for e in referent.sentences(0, 200) + referent.sentences(1, 200, held_out=True):
        assert REFERENT_RULE.reference(list(e.words)) == e.referent


def test_the_pointer_gradient_reference_matches_finite_differences():
    rng = np.random.default_rng(0)
    q, K, target = rng.standard_normal(3), rng.standard_normal((6, 3)), 4

    def loss(q):
        s = K @ q / np.sqrt(3)
        return np.log(np.exp(s).sum()) - s[target]

    numeric = [(loss(q + e) - loss(q - e)) / 2e-6 for e in 1e-6 * np.eye(3)]
    np.testing.assert_allclose(POINTER_GRADIENT.reference(q, K, target), numeric, rtol=1e-6)
