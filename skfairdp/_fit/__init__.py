"""The fit every estimator fills in (private to skfairdp).

- :mod:`.base`: the estimator base classes (parameters storage, module and optimizer, prediction).
- :mod:`.template`: the one private fit and its hooks.
- :mod:`.context`: what a fit knows before training (:class:`FitContext`) and its noise
  (:class:`NoisePlan`).
- :mod:`.planning`: the event a fit would execute, without training.
- :mod:`.parameters`: parameter declarations and constraints.
- :mod:`.schedules`: the "auto" rules for batch size, epochs and clipping norm.
- :mod:`.validation`, :mod:`.degenerate`, :mod:`.threads`: input checks, the degenerate-model
  warning, torch threads during fit.
"""
