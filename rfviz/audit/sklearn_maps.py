"""scikit-learn's random Fourier features (``sklearn.kernel_approximation.RBFSampler``) as a plain feature map.

``RBFSampler(gamma=0.5, n_components=M)`` draws W ~ N(0, 2γ I) = N(0, I) and b ~ U[0, 2π) and maps
x ↦ √(2/M)·cos(Wᵀx + b): Rahimi and Recht's phase-shifted trig features of the Gaussian kernel e^{−|x−y|²/2},
rfviz's ``trig_phase`` with m = M. One call = one draw: ``random_state`` is drawn from the lab's ``rng``.
"""

from __future__ import annotations

import numpy as np

from .closed_forms import closed_form

RBF_COMPONENTS = 64
"""n_components of the audited RBFSampler (= rfviz's trig_phase m: one real feature per frequency)."""
RBF_GAMMA = 0.5
"""γ of exp(−γ|x − y|²): 1/2 is the Gaussian kernel e^{−|x−y|²/2} the lab checks."""


def rbf_sampler(X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Φ = RBFSampler(gamma=0.5, n_components=64, random_state=<from rng>).fit(X).transform(X).

    Parameters
    ----------
    X : numpy.ndarray
        The inputs, shape (n, d).
    rng : numpy.random.Generator
        The draw's randomness (one call = one draw).

    Returns
    -------
    numpy.ndarray
        Φ, shape (n, M).

    Examples
    --------
    >>> rbf_sampler(np.zeros((3, 2)), np.random.default_rng(0)).shape  # doctest: +SKIP
    (3, 64)
    """
    import sklearn
    from sklearn.kernel_approximation import RBFSampler

    seed = int(rng.integers(2**31 - 1))
    with sklearn.config_context(assume_finite=True, skip_parameter_validation=True):
        sampler = RBFSampler(gamma=RBF_GAMMA, n_components=RBF_COMPONENTS, random_state=seed)
        return sampler.fit(X[:1]).transform(X)


rbf_sampler_mse = closed_form("trig_phase", m=RBF_COMPONENTS, kernel="gaussian")
"""rfviz's closed form for the same mechanism: trig_phase, m = 64, Gaussian kernel."""
