# %% [markdown]
# # Is it worth porting to JAX?
#
# A jupytext (py:percent) notebook: open it in Jupyter with jupytext, or run it as a script.
# The test suite runs it with a small number of runs (`ACCELSIM_RUNS`).
#
# Our 70B model's code base is PyTorch. TPU v5p hours are cheaper than H100 hours for the
# same peak compute, but the TPU stack is built for XLA. Three ways to train:
#
# * **h100**: stay on H100s (AWS on demand); PyTorch runs natively on CUDA.
# * **tpu-pytorch-xla**: run the PyTorch code on TPU v5p through PyTorch/XLA. The catalog
#   calls this fit *ported*: porting hours first, a lower starting MFU and a slower
#   learning curve for the optimisation hours.
# * **tpu-jax-rewrite**: rewrite the model in JAX first, then train natively on TPU. The
#   rewrite is engineering hours up front; afterwards the code is on its native stack.
#
# Engineering hours against hardware dollars: which one wins?

# %%
import os

import numpy as np

import accelsim as acs
from accelsim.models.engineering import optimal_optimization_hours

RUNS = int(os.environ.get("ACCELSIM_RUNS", "2000"))

# %% [markdown]
# The rewrite effort is our assumption, not a published figure: no study reports the hours
# to rewrite a production training stack in JAX. We take a lognormal with 90 % of its mass
# between 500 and 4,000 engineer-hours (three engineer-months to two engineer-years), at or
# above the upper part of the catalog's prior for a PyTorch/XLA port. Change it to your
# code base.

# %%
rewrite_hours = acs.LogNormal(low=500.0, high=4000.0)
h100 = acs.load_scenario("examples/llama70b_h100_aws.yaml")
tpu_xla = acs.load_scenario("examples/llama70b_tpu_v5p_gcp.yaml")
tpu_jax = acs.load_scenario("examples/llama70b_tpu_v5p_jax.yaml").replace(
    "assumptions.porting_hours", rewrite_hours
)
options = {"h100": h100, "tpu-pytorch-xla": tpu_xla, "tpu-jax-rewrite": tpu_jax}
cmp = acs.compare(options, runs=RUNS, seed=11)
print(
    cmp.table(
        [
            "tco_usd",
            "hardware_cost_usd",
            "engineering_cost_usd",
            "mfu",
            "engineering_days",
            "time_to_train_days",
        ]
    )
)
for a, b in [("tpu-jax-rewrite", "tpu-pytorch-xla"), ("tpu-jax-rewrite", "h100")]:
    print(f"P({a} cheaper than {b}) = {cmp.prob_less('tco_usd', a, b):.2f}")

# %% [markdown]
# ## Where the break-even lies
#
# The rewrite pays for itself when the MFU it buys (native start and a faster learning
# curve) saves more hardware than the rewrite costs. Fixing the rewrite effort at a few
# values shows how much rewriting this one run can carry. A rewrite also serves every
# later run on the same code, so a team that trains often can divide its cost among them.

# %%
for hours in (250.0, 1000.0, 4000.0):
    point = tpu_jax.replace("assumptions.porting_hours", hours)
    pair = acs.compare({"jax": point, "xla": tpu_xla}, runs=RUNS, seed=11)
    print(
        f"rewrite {hours:6,.0f} h: TCO {pair['jax'].mean('tco_usd') / 1e6:6.2f} M$ "
        f"vs PyTorch/XLA {pair['xla'].mean('tco_usd') / 1e6:6.2f} M$; "
        f"P(rewrite cheaper) = {pair.prob_less('tco_usd', 'jax', 'xla'):.2f}"
    )

# %% [markdown]
# ## How many optimisation hours are worth paying for?
#
# After the port, each optimisation hour costs an engineer's rate and raises MFU along a
# learning curve `MFU(h) = ceiling * (1 - (1 - start) * exp(-h / scale))`, which cuts the
# hardware bill. `optimal_optimization_hours` gives, in closed form, the hours that
# minimise hardware + engineering cost for a hardware bill *at the MFU ceiling*. On a
# native stack (JAX on TPU) the code starts closer to the ceiling and learns faster; on a
# ported stack (PyTorch/XLA) it starts lower, so more hours pay off, but each buys less.
# Inputs are the catalog priors' medians; the bill is that of the JAX run at its mean MFU
# scaled to the ceiling, and a few smaller budgets.

# %%
priors = acs.catalog.priors()
wage = float(priors.engineer_usd_per_hour.dist().ppf(0.5))
jax_res = cmp["tpu-jax-rewrite"]
# hardware cost scales as 1 / MFU, so the bill at the ceiling is the bill x MFU / ceiling
ceiling = float(priors.mfu_ceiling["tpu"].dist().ppf(0.5))
run_bill = float(np.mean(jax_res.samples("hardware_cost_usd") * jax_res.samples("mfu"))) / ceiling
budgets = np.array([1e5, 1e6, run_bill])
print(f"engineer rate (prior median): {wage:,.0f} USD/h")
print(f"{'hardware at ceiling':>20} {'native h*':>10} {'ported h*':>10}")
best: dict[str, np.ndarray] = {}
for fit in ("native", "ported"):
    best[fit] = optimal_optimization_hours(
        budgets,
        wage,
        float(priors.start_fraction[fit].dist().ppf(0.5)),
        float(priors.optimization_hours_scale[fit].dist().ppf(0.5)),
    )
for i, usd in enumerate(budgets):
    print(f"{usd:19,.0f}$ {best['native'][i]:9,.0f}h {best['ported'][i]:9,.0f}h")
default_hours = float(priors.optimization_hours.dist().ppf(0.5))
print(f"(the catalog's default for a production run: {default_hours:,.0f} h)")

# %% [markdown]
# At this run's size the hardware bill dwarfs any engineering budget, so the optimum is
# hundreds of hours on either stack, and the question is where those hours buy the most
# MFU. The recommendation below weighs the three options on expected TCO, time to a
# trained model and the practical checks (framework fit, lock-in).

# %%
print(cmp.recommendation)
