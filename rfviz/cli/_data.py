"""The data-set options shared by the commands that read a data set (``gram``, ``features-needed``,
``rank-estimators``, ``downstream``): declared once here, read back as the typed keyword arguments of the API
functions (``rfviz.gram``, ``rfviz.features_needed``, ``rfviz.rank_estimators``, ``rfviz.downstream``).
"""

from __future__ import annotations

import argparse
from typing import Any

from .. import data as datasets
from ..api.datasets import CLUSTER_PARAMS
from ..textio import parse_assignments

DATA_SOURCES = ("digits, wine, iris, breast_cancer (bundled with scikit-learn), clusters (HRF App. H.3) or a "
                ".csv/.npy path (rows = points)")


def add_data_arguments(parser: argparse.ArgumentParser, *, required: bool, seed_help: str,
                       data_help: str = DATA_SOURCES) -> None:
    """Add the "data set" group: ``--data``, ``--keys-data``, ``--data-param``, ``--queries``, ``--keys``,
    ``--preprocess``, ``--scale`` and ``--seed``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    required : bool
        Whether ``--data`` must be given (otherwise it defaults to None: no data set).
    seed_help : str
        The help of ``--seed``: whose seed it is in this command (the data draw, and whatever else it seeds).
    data_help : str
        The help of ``--data`` (default: the data sets it accepts, ``DATA_SOURCES``).

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_data_arguments(p, required=True, seed_help="seed of the data draw")
    >>> p.parse_args(["--data", "wine"]).queries
    64
    """
    group = parser.add_argument_group("data set")
    group.add_argument("--data", required=required, default=None, help=data_help)
    group.add_argument("--keys-data", default=None,
                       help="a second .csv/.npy file holding the keys (then --data holds the queries)")
    group.add_argument("--data-param", action="append", default=[], metavar="KEY=VALUE",
                       help="clusters parameters: " + ", ".join(datasets.CLUSTER_KEYS))
    group.add_argument("--queries", type=int, default=64, help="number of queries drawn (default 64)")
    group.add_argument("--keys", type=int, default=64, help="number of keys drawn (default 64)")
    group.add_argument("--preprocess", default=None,
                       help="comma-separated steps in order: " + ", ".join(datasets.PREPROCESS_STEPS) +
                            " or none (default center,scale; none for clusters)")
    group.add_argument("--scale", type=float, default=1.0, help="mean norm after the scale step (default 1)")
    group.add_argument("--seed", type=int, default=0, help=seed_help)


def data_options(args: argparse.Namespace) -> dict[str, Any]:
    """The parsed data-set options other than ``--data``, as the keyword arguments the typed functions take
    (``keys_data``, ``data_params`` (``--data-param`` text read by ``CLUSTER_PARAMS``; an unknown name is passed on
    for the API to refuse), ``queries``, ``keys``, ``preprocess``, ``scale``, ``seed``).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed arguments of a command configured with :func:`add_data_arguments`.

    Returns
    -------
    dict

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_data_arguments(p, required=True, seed_help="seed of the data draw")
    >>> data_options(p.parse_args(["--data", "clusters", "--data-param", "d=3"]))["data_params"]
    {'d': 3}
    """
    params = {k: CLUSTER_PARAMS[k].parse(v) if k in CLUSTER_PARAMS else v
              for k, v in parse_assignments(args.data_param).items()}
    return {"keys_data": args.keys_data, "data_params": params, "queries": args.queries,
            "keys": args.keys, "preprocess": args.preprocess, "scale": args.scale, "seed": args.seed}
