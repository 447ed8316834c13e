"""The fit every estimator fills in (private to skfairdp).

- :mod:`.base`: the estimator base classes (parameters storage, module and optimizer, prediction).
- :mod:`.template`: the one private fit, its hooks, and ``planned_event`` (the dry run).
- :mod:`.context`: what a fit knows before training (:class:`FitContext`) and its noise
  (:class:`NoisePlan`).
- :mod:`.budget`: the one owner of a fit's budget (calibration, fixed-noise step caps, the
  rules for a release sized from a share of the budget).
- :mod:`.schedules`: every ``"auto"`` rule (batch size, epochs, clipping norm, CGOO's defaults).
- :mod:`.parameters`: the constraint of every parameter, and storing ``__init__``'s arguments.
- :mod:`.randomized`: the randomized (mixture) prediction draw.
- :mod:`.validation`, :mod:`.degenerate`, :mod:`.threads`: input checks, the degenerate-model
  warning, torch threads during fit.
"""
