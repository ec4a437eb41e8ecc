"""Pure numeric formulas, one module per paper (keys in rfviz.references): ``hrf`` [HRF], ``crt`` [CRT],
``simrf`` [SimRF] (plus its coupled torch samplers, registered with rfviz.sampling on import), ``dp`` [DP],
``optimal`` [OS]. These modules import only numerics, geometry, params and sampling, never rfviz.estimators."""
