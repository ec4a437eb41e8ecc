"""The data-set arguments shared by the API functions that read a data set (``gram``, ``features_needed``,
``rank_estimators``, ``downstream``): validated from typed values and loaded once, here (``load_dataset``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import data as datasets
from ..params import SEED_PARAM, Param, ParameterError, check

SCALE_PARAM = Param("scale", 1.0, "float", "mean norm after the scale step", low=0.0, low_open=True)
"""The mean norm of the data after the ``scale`` preprocessing step."""
QUERIES_PARAM = Param("queries", 64, "int", "number of queries drawn", low=1)
KEYS_PARAM = Param("keys", 64, "int", "number of keys drawn", low=1)
CLUSTER_PARAMS: dict[str, Param] = {key: Param(key, 0, "int" if typ is int else "float")
                                    for key, typ in datasets.CLUSTER_KEYS.items()}
"""The ``clusters`` data set's parameters (``data_params``), one Param each (the CLI parses ``--data-param``
text with them)."""


def cluster_options(options: Any) -> dict[str, Any]:
    """The ``clusters`` parameters: names of ``data.CLUSTER_KEYS``, numbers (integers where the key is one).

    Parameters
    ----------
    options : mapping
        Parameter name → number.

    Returns
    -------
    dict

    Examples
    --------
    >>> cluster_options({"sigma": 1, "d": 3})
    {'sigma': 1.0, 'd': 3}
    """
    if not isinstance(options, Mapping):
        raise ParameterError(f"data_params must be a mapping of clusters parameters, got {str(options)[:40]!r}")
    out: dict[str, Any] = {}
    for key, value in options.items():
        spec = CLUSTER_PARAMS.get(key) if isinstance(key, str) else None
        if spec is None:
            raise ParameterError(f"clusters has no parameter {str(key)[:40]!r}; its parameters are: "
                                 + ", ".join(datasets.CLUSTER_KEYS))
        out[key] = check(value, spec)
    return out


def preprocess_steps(preprocess: Any, data: str) -> tuple[str, ...]:
    """The preprocessing steps named by ``preprocess`` (default ``center,scale``; none for ``clusters``).

    Parameters
    ----------
    preprocess : str or None
        Comma-separated steps of ``data.PREPROCESS_STEPS``, or ``none``.
    data : str
        The data set (its default steps).

    Returns
    -------
    tuple of str

    Examples
    --------
    >>> preprocess_steps(None, "iris")
    ('center', 'scale')
    """
    if preprocess is None:
        preprocess = "none" if data == "clusters" else "center,scale"
    if not isinstance(preprocess, str) or "" in [t.strip() for t in preprocess.split(",")]:
        raise ParameterError(f"preprocess must name steps ({', '.join(datasets.PREPROCESS_STEPS)}) or none, got "
                             f"{str(preprocess)[:80]!r}")
    return datasets.parse_preprocess(preprocess)


def load_dataset(data: Any, *, keys_data: Any = None, data_params: Any = None, queries: Any = 64, keys: Any = 64,
                 preprocess: Any = None, scale: Any = 1.0, seed: Any = 0) -> Any:
    """Validate the data-set arguments (typed values) and load the data set.

    Parameters
    ----------
    data : str
        ``digits``, ``wine``, ``iris``, ``breast_cancer``, ``clusters`` or a .csv/.npy path.
    keys_data : str, optional
        A second file holding the keys (then ``data`` holds the queries).
    data_params : mapping, optional
        Parameters of ``clusters`` (``CLUSTER_PARAMS``).
    queries, keys : int
        Points drawn on each side.
    preprocess : str, optional
        Comma-separated steps (default ``center,scale``; none for ``clusters``).
    scale : float
        Mean norm after the ``scale`` step.
    seed : int
        Seed of the draw.

    Returns
    -------
    rfviz.data.DataSet

    Examples
    --------
    >>> load_dataset("iris", queries=4, keys=4).queries.shape
    (4, 4)
    """
    for label, value in (("data", data), ("keys_data", keys_data)):
        if not (isinstance(value, str) or (label == "keys_data" and value is None)):
            raise ParameterError(f"{label} must be a data set name or a file path, got {str(value)[:40]!r}")
    queries, keys = check(queries, QUERIES_PARAM), check(keys, KEYS_PARAM)
    seed, scale = check(seed, SEED_PARAM), check(scale, SCALE_PARAM)
    steps = preprocess_steps(preprocess, data)
    return datasets.load(data, keys_data, queries=queries, keys=keys, steps=steps, scale=scale, seed=seed,
                         options=cluster_options(data_params or {}))


def data_info(ds: Any) -> dict[str, Any]:
    """The ``data`` object of a command's JSON: the data set's description without its label arrays.

    Parameters
    ----------
    ds : rfviz.data.DataSet
        A loaded data set.

    Returns
    -------
    dict

    Examples
    --------
    >>> data_info(load_dataset("iris", queries=4, keys=4))["name"]
    'iris'
    """
    return {k: v for k, v in ds.describe().items() if not k.endswith("_labels")}
