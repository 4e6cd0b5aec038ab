# %% [markdown]
# # How big should our shared cluster be?
#
# A jupytext (py:percent) notebook: open it in Jupyter with jupytext, or run it as a script.
# The test suite runs it with a small number of runs (`ACCELSIM_RUNS`).
#
# A team's on-prem H100 cluster serves a stream of jobs: most use one GPU or one node, a few
# use many (the skew of public cluster traces). Buying more chips costs money every day;
# buying too few makes every researcher wait. This notebook puts numbers on that trade.

# %%
import os

import numpy as np

import accelsim as acs
from accelsim.dists import as_dist

RUNS = int(os.environ.get("ACCELSIM_RUNS", "2000"))
# Every run of the discrete-event engine simulates each job of the month, so a sizing study
# takes fewer runs than a training-run study; 10 runs already separate the sizes clearly.
DES_RUNS = max(4, RUNS // 20)

# %% [markdown]
# Start from the example job stream (one job every 30 minutes on average, lognormal
# durations, EASY backfill) and shorten the horizon to one month after a three-day warm-up,
# so the queue is measured in steady state rather than from an empty cluster.

# %%
base = (
    acs.load_scenario("examples/shared_onprem_h100_jobstream.yaml")
    .replace("horizon_days", 30.0)
    .replace("warmup_days", 3.0)
)
SIZES = [256, 320, 384, 512, 768]
results = {n: acs.simulate(base.replace("fleet.0.count", n), runs=DES_RUNS, seed=7) for n in SIZES}

# %% [markdown]
# For each size: the mean and 95th-percentile wait of a job between submission and start,
# the share of the chips that were busy, what the month cost (capex amortised over the
# month, energy, hosting and operations) and how many jobs were still queued at the end.
# Values are means over the runs; the same seed gives every size the same job stream, so
# the differences come from the size alone.
# (Where the mean wait exceeds the P95 wait, a few runs with a long backlog dominate the
# mean: the wait distribution is heavy-tailed.)

# %%
header = (
    f"{'chips':>6} {'mean wait':>10} {'p95 wait':>10} {'util':>6} {'TCO/month':>12} {'queued':>7}"
)
print(header)
for n, res in results.items():
    print(
        f"{n:6d} {res.mean('mean_wait_hours'):9.1f}h {res.mean('p95_wait_hours'):9.1f}h "
        f"{res.mean('utilization'):6.2f} {res.mean('tco_usd'):11,.0f}$ "
        f"{res.mean('jobs_queued_at_horizon'):7.0f}"
    )

# %% [markdown]
# ## Reading the numbers: queueing
#
# The offered load is fixed (the jobs the team submits): arrival rate x mean chips per job
# x mean duration, in chips kept busy on average. Divided by the cluster size it is the
# utilisation `rho` the cluster would have if no chip ever idled in front of a queue. In a
# queue the mean wait grows like `rho / (1 - rho)` (Kingman's approximation for one
# server; many servers soften it, gang jobs that need many chips at once make it
# steeper), so it explodes as `rho` nears 1. Going from a busy cluster to a comfortable
# one cuts waits by an order of magnitude; going further buys almost nothing but idle chips.
# At `rho >= 1` (here 256 chips) there is no steady state at all: the cluster cannot keep
# up, and the queue grows for as long as you look.
#
# A pool no larger than the biggest job (here 256 chips) is a special hazard: a 256-chip
# job can start only when every chip is up and idle at once, so it sits at the head of the
# queue while failures and long jobs keep a chip busy, and in some runs much of the stream
# piles up behind it: the measured utilisation is then *below* the offered load while the
# waits are the longest. The waits count only jobs that started; jobs still queued at the
# end (last column) are left out, so the small sizes look better than they are.

# %%
stream = base.workload
assert isinstance(stream, acs.JobStream)
offered_chips = (
    as_dist(stream.chips).expected_value()
    * as_dist(stream.duration_hours).expected_value()
    / as_dist(stream.interarrival_hours).expected_value()
)
print(f"offered load: {offered_chips:.0f} chips busy on average")
for n in SIZES:
    rho = offered_chips / n
    kingman = rho / (1.0 - rho) if rho < 1.0 else float("inf")
    print(
        f"{n:4d} chips: offered rho {rho:.2f}, rho/(1-rho) = {kingman:5.2f}, "
        f"measured utilisation {results[n].mean('utilization'):.2f}, "
        f"mean wait {results[n].mean('mean_wait_hours'):5.1f} h"
    )

# %% [markdown]
# ## The cost of waiting
#
# The TCO above counts the chips only, so it always prefers the smallest cluster. A job
# that waits keeps its researcher waiting too. Value that time at the catalog's fully
# loaded engineering rate (its prior mean) and add it: the cheapest cluster is then the
# one that balances chips against people. (A lower bound on the waiting: completed jobs x
# their mean wait, without the jobs still queued at the end; and not every waiting job
# idles a researcher, so scale `usd_per_hour` to your team.)

# %%
usd_per_hour = acs.catalog.priors().engineer_usd_per_hour.dist().expected_value()
print(f"researcher time valued at {usd_per_hour:,.0f} USD/h (catalog prior mean)")
total = {}
for n, res in results.items():
    waiting_usd = res.samples("jobs_completed") * res.samples("mean_wait_hours") * usd_per_hour
    total[n] = float(np.mean(res.samples("tco_usd") + waiting_usd))
    print(
        f"{n:4d} chips: hardware {res.mean('tco_usd'):11,.0f} $ + waiting "
        f"{float(np.mean(waiting_usd)):11,.0f} $ = {total[n]:11,.0f} $ per month"
    )
best = min(total, key=total.__getitem__)
print(f"Lowest hardware + waiting cost: {best} chips")

# %% [markdown]
# ## Two sizes head to head
#
# `acs.compare` runs both sizes on the same random numbers (paired runs). Its recommendation
# ranks by TCO, i.e. by the hardware bill: read it together with the waits in the table and
# the waiting cost above.

# %%
small, large = 384, 512
cmp = acs.compare(
    {
        f"{small} chips": base.replace("fleet.0.count", small),
        f"{large} chips": base.replace("fleet.0.count", large),
    },
    runs=DES_RUNS,
    seed=7,
)
print(cmp.table(["tco_usd", "mean_wait_hours", "p95_wait_hours", "utilization"]))
print(cmp.recommendation)
