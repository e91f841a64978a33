"""Provenance labels: where each plan value came from, kept beside it as the plan runs.

- :mod:`~dcbrain.tfplan.labels.provenance`: labels, their shapes and a call's sources.
- :mod:`~dcbrain.tfplan.labels.analysis`: what the rewrite knows of a whole plan first.
- :mod:`~dcbrain.tfplan.labels.rewrite`: the code that keeps a shadow label per variable,
  with :mod:`~dcbrain.tfplan.labels.exprs` (label expressions) and
  :mod:`~dcbrain.tfplan.labels.containers` (what is read out of containers).
- :mod:`~dcbrain.tfplan.labels.hoist`: loop-invariant label updates run once.
- :mod:`~dcbrain.tfplan.labels.path`: how an untrusted label reached a refused argument.
"""
