# %% [markdown]
# # GPU or TPU for our 70B run?
#
# A jupytext (py:percent) notebook: open it in Jupyter with jupytext, or run it as a script.
# The test suite runs it with a small number of runs (`ACCELSIM_RUNS`).

# %%
import os

import accelsim as acs

RUNS = int(os.environ.get("ACCELSIM_RUNS", "2000"))

# %% [markdown]
# The same 70B-parameter PyTorch production run on 1,024 H100s (AWS, on demand) and on
# TPU v5p (Google Cloud) sized to similar peak bf16 compute. Everything else comes from the
# catalog's sourced priors.

# %%
gpu = acs.load_scenario("examples/llama70b_h100_aws.yaml")
tpu = acs.load_scenario("examples/llama70b_tpu_v5p_gcp.yaml")
cmp = acs.compare({"h100": gpu, "tpu-v5p": tpu}, runs=RUNS, seed=42)
print(cmp.table(["tco_usd", "time_to_train_days", "mfu", "engineering_cost_usd"]))

# %% [markdown]
# The code base is PyTorch, so the TPU option pays a port first. What if it were JAX?

# %%
jax_tpu = acs.load_scenario("examples/llama70b_tpu_v5p_jax.yaml")
jax_gpu = acs.load_scenario("examples/llama70b_h100_jax.yaml")
cmp_jax = acs.compare({"h100": jax_gpu, "tpu-v5p": jax_tpu}, runs=RUNS, seed=42)
print(cmp_jax.table(["tco_usd", "time_to_train_days", "mfu"]))
print(f"P(TPU cheaper | PyTorch) = {cmp.prob_less('tco_usd', 'tpu-v5p', 'h100'):.2f}")
print(f"P(TPU cheaper | JAX)     = {cmp_jax.prob_less('tco_usd', 'tpu-v5p', 'h100'):.2f}")

# %% [markdown]
# Which uncertain inputs drive the TPU option's cost?

# %%
for name, rho in acs.sensitivity(tpu, metric="tco_usd", runs=RUNS, seed=1)[:5]:
    print(f"{name:50s} {rho:+.2f}")
print(cmp.recommendation)
