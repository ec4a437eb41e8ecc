"""Audits of the random features in other libraries: scikit-learn's RBFSampler, GPyTorch's RFFKernel and
performer-pytorch's FAVOR+ projection (with a sign-fixed twin), each turned into a plain feature map
``features(X, rng) -> Φ`` by a thin adapter (``sklearn_maps``, ``gpytorch_maps``, ``performer_maps``) and run through
the estimator lab against rfviz's closed form for the same mechanism (``closed_forms``), in a plugin process.
``cases`` lists them and runs them (``run_audit``; ``rfviz audit``). The libraries are the optional extra
``rfviz[audit]``; a missing one is skipped with the reason.
"""

from __future__ import annotations

from .cases import (
    AUDITS,
    LIBRARIES,
    AuditCase,
    audit_json,
    audit_text,
    export_audit_html,
    finding,
    library_version,
    run_audit,
    select,
)

__all__ = ["AUDITS", "LIBRARIES", "AuditCase", "audit_json", "audit_text", "export_audit_html", "finding",
           "library_version", "run_audit", "select"]
