"""scikit-learn 1.9.1's own RBFSampler tests (sklearn/tests/test_kernel_approximation.py), adapted only by the
constructor: ``RBFSampler(...)`` becomes ``RandomFeatures(...)`` (``"trig"`` where the issue asks for it), every
assertion and threshold unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.utils._testing import assert_allclose
from sklearn.utils.fixes import CSR_CONTAINERS

from rfviz.sklearn import RandomFeatures

# generate data (as scikit-learn's module does)
rng = np.random.RandomState(0)
X = rng.random_sample(size=(300, 50))
Y = rng.random_sample(size=(300, 50))
X /= X.sum(axis=1)[:, np.newaxis]
Y /= Y.sum(axis=1)[:, np.newaxis]
X.flags.writeable = False
Y.flags.writeable = False


@pytest.mark.parametrize("estimator", ["trig"])
def test_rbf_sampler(estimator: str) -> None:
    """trig (sin/cos pairs): RBFSampler's own map, trig_phase, meets the |mean error| ≤ 0.01 threshold only for some
    seeds (42 among them; RBFSampler itself gives 0.017 and 0.040 at seeds 0 and 2): its phase term
    cos(ω·(x + y) + 2b) adds an error common to every pair."""
    # test that RBFSampler approximates kernel on random data
    # compute exact kernel
    gamma = 10.0
    kernel = rbf_kernel(X, Y, gamma=gamma)

    # approximate kernel mapping
    rbf_transform = RandomFeatures(estimator, gamma=gamma, n_components=1000, random_state=42)
    X_trans = rbf_transform.fit_transform(X)
    Y_trans = rbf_transform.transform(Y)
    kernel_approx = np.dot(X_trans, Y_trans.T)

    error = kernel - kernel_approx
    assert np.abs(np.mean(error)) <= 0.01  # close to unbiased
    np.abs(error, out=error)
    assert np.max(error) <= 0.1  # nothing too far off
    assert np.mean(error) <= 0.05  # mean is fairly close


@pytest.mark.parametrize("global_dtype", [np.float32, np.float64])
def test_rbf_sampler_fitted_attributes_dtype(global_dtype: type) -> None:
    """Check that the fitted attributes are stored accordingly to the
    data type of X."""
    rbf = RandomFeatures()

    X = np.array([[1, 2], [3, 4], [5, 6]], dtype=global_dtype)

    rbf.fit(X)

    assert rbf.random_offset_.dtype == global_dtype
    assert rbf.random_weights_.dtype == global_dtype


def test_rbf_sampler_dtype_equivalence() -> None:
    """Check the equivalence of the results with 32 and 64 bits input."""
    rbf32 = RandomFeatures(random_state=42)
    X32 = np.array([[1, 2], [3, 4], [5, 6]], dtype=np.float32)
    rbf32.fit(X32)

    rbf64 = RandomFeatures(random_state=42)
    X64 = np.array([[1, 2], [3, 4], [5, 6]], dtype=np.float64)
    rbf64.fit(X64)

    assert_allclose(rbf32.random_offset_, rbf64.random_offset_)
    assert_allclose(rbf32.random_weights_, rbf64.random_weights_)


def test_rbf_sampler_gamma_scale() -> None:
    """Check the inner value computed when `gamma='scale'`."""
    X, y = [[0.0], [1.0]], [0, 1]
    rbf = RandomFeatures(gamma="scale")
    rbf.fit(X, y)
    assert rbf._gamma == pytest.approx(4)


@pytest.mark.parametrize("csr_container", CSR_CONTAINERS)
def test_input_validation(csr_container: type) -> None:
    # Regression test: kernel approx. transformers should work on lists
    # No assertions; the old versions would simply crash
    X = [[1, 2], [3, 4], [5, 6]]
    RandomFeatures().fit(X).transform(X)

    X = csr_container(X)
    RandomFeatures().fit(X).transform(X)


def test_get_feature_names_out() -> None:
    """Check get_feature_names_out"""
    est = RandomFeatures().fit(X)
    X_trans = est.transform(X)

    names_out = est.get_feature_names_out()
    class_name = RandomFeatures.__name__.lower()
    expected_names = [f"{class_name}{i}" for i in range(X_trans.shape[1])]
    assert_array_equal(names_out, expected_names)
