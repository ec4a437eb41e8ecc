"""Every registered random-feature map as a scikit-learn transformer: ``rfviz.sklearn.RandomFeatures``, a drop-in
for ``sklearn.kernel_approximation.RBFSampler``.

scikit-learn's own ``kernel_approximation`` offers ``RBFSampler`` (trig features), ``Nystroem`` and
``PolynomialCountSketch``; this package makes every feature map rfviz verifies (positive and antithetic FAVOR+,
hybrids, orthogonal/simplex/structured couplings, GERF, complex exponential, dot-product sketches, ...) usable in a
``Pipeline`` and a ``GridSearchCV``, with RBFSampler's ``gamma`` and ``n_components``.

>>> import numpy as np
>>> from rfviz.sklearn import RandomFeatures
>>> X = np.random.default_rng(0).normal(size=(5, 3)) * 0.3
>>> RandomFeatures("positive", n_components=8, random_state=0).fit_transform(X).shape
(5, 8)
"""

from ._params import SIDES
from ._transformer import RandomFeatures

__all__ = ["SIDES", "RandomFeatures"]
