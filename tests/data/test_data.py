"""Data sets and preprocessing (rfviz.data)."""

from __future__ import annotations

import numpy as np
import pytest

from rfviz import data
from rfviz.maths.hrf import ce_loss_min_real_diagonal_batch as l_min_real_diagonal
from rfviz.params import ParameterError


@pytest.mark.parametrize("name,d", [("digits", 64), ("wine", 13), ("iris", 4), ("breast_cancer", 30)])
def test_bundled_sets_split_into_disjoint_queries_and_keys(name: str, d: int) -> None:
    ds = data.load(name, queries=10, keys=7, steps=(), seed=1)
    assert ds.queries.shape == (10, d) and ds.keys.shape == (7, d)
    raw = data.bundled(name)
    rows = {tuple(r) for r in raw}
    assert all(tuple(r) in rows for r in np.concatenate([ds.queries, ds.keys]))
    assert "scikit-learn" in ds.info["source"]


def test_preprocessing_steps() -> None:
    rng = np.random.default_rng(0)
    q, k = rng.normal(3.0, 2.0, (6, 5)), rng.normal(3.0, 2.0, (4, 5))
    cq, ck = data.preprocess(q, k, ["center"])
    np.testing.assert_allclose(np.concatenate([cq, ck]).mean(0), 0, atol=1e-12)
    sq, sk = data.preprocess(q, k, ["sphere"])
    np.testing.assert_allclose(np.linalg.norm(np.concatenate([sq, sk]), axis=1), 1.0)
    aq, _ = data.preprocess(q, k, ["attention"])
    np.testing.assert_allclose(aq, q * 5 ** -0.25)
    zq, zk = data.preprocess(q, k, ["standardize"])
    np.testing.assert_allclose(np.concatenate([zq, zk]).std(0), 1.0)
    mq, mk = data.preprocess(q, k, ["center", "scale"], scale=0.7)
    assert np.isclose(np.linalg.norm(np.concatenate([mq, mk]), axis=1).mean(), 0.7)
    # one transform for both sides: x·y changes by the common factor only
    factor = 0.7 / np.linalg.norm(np.concatenate([cq, ck]), axis=1).mean()
    np.testing.assert_allclose(mq @ mk.T, (cq @ ck.T) * factor**2)
    assert data.parse_preprocess("none") == ()
    with pytest.raises(ParameterError, match="preprocess"):
        data.parse_preprocess("center,whiten")


def test_hrf_clusters_geometry() -> None:
    ds = data.hrf_clusters(points=30, d=12, sigma=0.5, same_sign=0, seed=2)
    np.testing.assert_allclose(np.linalg.norm(ds.queries, axis=1), 0.1)
    np.testing.assert_allclose(np.linalg.norm(ds.keys, axis=1), 1.0)
    assert ds.queries.shape == (60, 12) and ds.keys.shape == (60, 12)
    xc, yc = data.sign_matched_centres(12, 0, np.random.default_rng(2))
    assert np.all(l_min_real_diagonal(xc[:, None], yc[None]) == 0)  # opposite signs everywhere: l_min = 0
    xc, yc = data.sign_matched_centres(12, 4, np.random.default_rng(2))
    assert np.all(np.sign(xc[:, :4]) == np.sign(yc[:, :4])) and np.all(np.sign(xc[:, 4:]) != np.sign(yc[:, 4:]))
    assert np.all(l_min_real_diagonal(xc[:, None], yc[None]) > 0)


def test_csv_and_npy_files(tmp_path) -> None:
    a = np.arange(24, dtype=float).reshape(8, 3)
    csv = tmp_path / "pts.csv"
    csv.write_text("a,b,c\n" + "\n".join(",".join(f"{v:g}" for v in row) for row in a))
    npy = tmp_path / "keys.npy"
    np.save(npy, a + 100)
    np.testing.assert_array_equal(data.read_array(str(csv)), a)
    np.testing.assert_array_equal(data.read_array(npy.read_bytes(), filename="keys.npy"), a + 100)
    ds = data.load(str(csv), str(npy), queries=3, keys=5, steps=(), seed=0)
    assert ds.queries.shape == (3, 3) and np.all(ds.keys >= 100)
    one = data.load(str(csv), queries=4, keys=4, steps=(), seed=0)
    assert not {tuple(r) for r in one.queries} & {tuple(r) for r in one.keys}


def test_file_errors(tmp_path, monkeypatch) -> None:
    with pytest.raises(ParameterError, match="no file"):
        data.load(str(tmp_path / "missing.csv"))
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("1,2\n3\n")
    with pytest.raises(ParameterError, match="same number of columns"):
        data.read_array(str(ragged))
    nan = tmp_path / "nan.csv"
    nan.write_text("1,2\nnan,3\n")
    with pytest.raises(ParameterError, match="finite"):
        data.read_array(str(nan))
    text = tmp_path / "words.csv"
    text.write_text("a,b\nc,d\n")
    with pytest.raises(ParameterError, match="not a row of numbers"):
        data.read_array(str(text))
    obj = tmp_path / "obj.npy"
    np.save(obj, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ParameterError, match="npy"):
        data.read_array(str(obj))
    wide = tmp_path / "wide.npy"
    np.save(wide, np.zeros((4, 2)))
    with pytest.raises(ParameterError, match="same number of columns"):
        data.load(str(wide), str(_write(tmp_path, np.zeros((4, 3)))), queries=2, keys=2)
    monkeypatch.setattr(data, "MAX_FILE_BYTES", 10)
    with pytest.raises(ParameterError, match="MiB"):
        data.read_array(str(wide))


def _write(tmp_path, a: np.ndarray):
    p = tmp_path / "other.npy"
    np.save(p, a)
    return p


def test_bad_counts_and_options() -> None:
    with pytest.raises(ParameterError, match="queries"):
        data.load("iris", queries=151)
    with pytest.raises(ParameterError, match="queries"):
        data.load("iris", queries=0)
    with pytest.raises(ParameterError, match="no parameter 'sigma'"):
        data.load("iris", options={"sigma": 1})
    with pytest.raises(ParameterError, match="same_sign"):
        data.load("clusters", options={"same_sign": 99, "d": 5})
    with pytest.raises(ParameterError, match="data must be"):
        data.bundled("mnist")
