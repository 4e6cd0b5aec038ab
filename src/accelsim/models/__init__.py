"""Pure, vectorised physics and economics models: perf, reliability, engineering, cost."""
