# %% [markdown]
# # Serve Llama 3.1 70B at 200 requests/s: H100, H200, MI300X or TPU v6e?
#
# A jupytext (py:percent) notebook: open it in Jupyter with jupytext, or run it as a script.
# The test suite runs it with a small number of runs (`ACCELSIM_RUNS`).
#
# The SLO is 2 s time to first token and 100 ms per output token at the 99th percentile;
# prompts vary per request (90 % between 200 and 4,000 tokens), answers are 300 tokens.
# Each option has enough replicas for about 260 requests/s at its median capacity; the
# question is what each costs per million tokens and how often it meets the SLO.

# %%
import math
import os

import accelsim as acs

RUNS = int(os.environ.get("ACCELSIM_RUNS", "2000"))


# %%
def option(chip: str, provider: str, chips_per_replica: int) -> acs.Scenario:
    svc = acs.Serving(
        model="llama-3.1-70b",
        precision="fp8",
        rate_rps=acs.Triangular(low=150, mode=200, high=260),
        input_tokens=acs.LogNormal(low=200, high=4000),
        output_tokens=300,
        slo=acs.SLO(ttft_ms=2000, tpot_ms=100, percentile=99),
        chips_per_replica=chips_per_replica,
        prefill_chunk_tokens=2048,
        horizon_days=30,
    )
    one = acs.Scenario(
        name=chip,
        workload=svc,
        fleet=[acs.Pool(chip=chip, count=chips_per_replica, provider=provider)],
    )
    # size the fleet from one replica's median SLO capacity, with headroom to 260 req/s
    cap = acs.serving_capacity(one, runs=max(RUNS, 50), seed=1)
    per_replica = max(cap.quantile("slo_rps_per_replica", 0.5), 1e-3)
    replicas = math.ceil(260.0 / per_replica)
    return one.replace("fleet.0.count", replicas * chips_per_replica)


options = {
    "h100": option("h100-sxm", "aws", 4),
    "h200": option("h200", "aws", 2),
    "mi300x": option("mi300x", "azure", 2),
    "tpu-v6e": option("tpu-v6e", "gcp", 8),
}
for name, s in options.items():
    print(f"{name:8s} {s.fleet[0].count:5d} chips")

# %% [markdown]
# Common random numbers: every option sees the same traffic draws.

# %%
cmp = acs.compare(options, runs=RUNS, seed=42, progress=False)
print(
    cmp.table(
        ["usd_per_million_output_tokens", "slo_attainment", "ttft_p99_ms", "tpot_p99_ms", "tco_usd"]
    )
)

# %% [markdown]
# The recommendation weighs cost against the SLO risk and lock-in of each option.

# %%
print(cmp.recommendation)
