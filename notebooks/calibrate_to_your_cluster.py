# %% [markdown]
# # Calibrate to your cluster: does our own H100 benchmark change the H100-or-H200 choice?
#
# A jupytext (py:percent) notebook: open it in Jupyter with jupytext, or run it as a script.
# The test suite runs it with a small number of runs (`ACCELSIM_RUNS`).
#
# The team serves Llama 3.1 70B in FP8 at 1,000-token prompts and answers. It ran vLLM's
# `bench serve` on one 2 x H100 replica (the JSON in `examples/measurements`) and a short
# training run. The question: compare H100 and H200 for the endpoint, first with the public
# priors, then with the priors calibrated to the team's own measurements.

# %%
import os

import numpy as np

import accelsim as acs

RUNS = int(os.environ.get("ACCELSIM_RUNS", "2000"))

# %% [markdown]
# ## The measurements, read from the files the tools wrote

# %%
bench = acs.Measurements.from_file(
    "examples/measurements/vllm_bench_serve.json", chip="h100-sxm", chips=2, precision="fp8"
)
own = acs.Measurements.from_file("examples/measurements/measurements.yaml")
cat = acs.catalog.calibrate(bench + own)
for record in cat.calibration:
    if record.measurements:
        print(record.describe())


# %% [markdown]
# ## One replica's capacity, before and after


# %%
def endpoint(chip: str, chips: int, count: int) -> acs.Scenario:
    svc = acs.Serving(
        model="llama-3.1-70b",
        precision="fp8",
        rate_rps=12.0,
        input_tokens=1000,
        output_tokens=1000,
        slo=acs.SLO(ttft_ms=3000, tpot_ms=100, percentile=99),
        chips_per_replica=chips,
        horizon_days=30,
    )
    pool = acs.Pool(chip=chip, count=count, provider="aws" if chip == "h100-sxm" else "gcp")
    return acs.Scenario(name=f"{chip} x {count}", workload=svc, fleet=[pool])


for chip, chips in (("h100-sxm", 2), ("h200", 1)):
    one = endpoint(chip, chips, chips)
    for name, c in (("public priors", None), ("calibrated", cat)):
        x = acs.serving_capacity(one, runs=RUNS, seed=1, catalog=c).samples(
            "offline_tokens_per_s_per_chip"
        )
        p5, p50, p95 = np.percentile(x, [5, 50, 95])
        print(f"{chip:>9} {name:>13}: P50 {p50:,.0f} tok/s/chip (P5-P95 {p5:,.0f}-{p95:,.0f})")

# %% [markdown]
# ## The choice, with the team's own numbers

# %%
options = {"H100": endpoint("h100-sxm", 2, 16), "H200": endpoint("h200", 1, 16)}
for name, c in (("public priors", None), ("calibrated", cat)):
    cmp = acs.compare(options, runs=RUNS, seed=1, catalog=c)
    print(f"--- {name}")
    print(cmp.as_table())
    print(cmp.recommendation)
