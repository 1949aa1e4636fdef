#!/usr/bin/env bash
# Re-measured Figs. 2-3 on the consistent environment (issue 11, item 4), resumable: re-run to continue.
# GP: the exact GP (gp-exact) with the hyperparameters of the environment (no refits: refit_first=0), as the
# paper sets them "according to the prior".  Potential: elevation (regret then measures learning: with perfect
# knowledge the oracle picks the exact optimum).
# Order: Fig. 2 on the synthetic hilly city and Monaco A/B, Fig. 3 on the synthetic city, Fig. 2 on Luxembourg A/B
# (BI, then GP-TS, GP-BUCB, GP-UCB).  Reports: docs/results/fig2_table_consistent.md, fig3_table_consistent.md.
set -u
cd "$(dirname "$0")/.."
export EVROUTE_DATA=${EVROUTE_DATA:-/work/shared/data} OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
common=(--env consistent --potential elevation --gp-model gp-exact --runs results/consistent --tag _consistent
        --workers 2 --seeds 5 --horizon 500 --model-param refit_first=0)
fig2() { nice -n 10 .venv/bin/python scripts/repro_fig2.py "${common[@]}" "$@"; }
fig2 --routes synthetic:2000:0:A
fig2 --routes monaco:A monaco:B
nice -n 10 .venv/bin/python scripts/repro_fig3.py "${common[@]}" --routes synthetic:2000:0:A
fig2 --routes luxembourg:A luxembourg:B --methods bi-ucb bi-bucb bi-ts
fig2 --routes luxembourg:A luxembourg:B --methods gp-ts
fig2 --routes luxembourg:A luxembourg:B --methods gp-bucb
fig2 --routes luxembourg:A luxembourg:B --methods gp-ucb
