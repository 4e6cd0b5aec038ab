"""Engines turn one row of input draws into usage: calendar phases, chip-hours, interruptions.

- :mod:`accelsim.engines.analytic`: vectorised numpy, every run at once, for one training
  run on a dedicated fleet (exact where it applies).
- :mod:`accelsim.engines.des`: a SimPy discrete-event engine for anything with contention:
  shared pools, job streams and traces, gang scheduling, failures and repairs, spot
  preemptions, capacity lead times.

Both call the same :mod:`accelsim.models` and must agree in distribution on the cases both
can run (tests/agreement).
"""
