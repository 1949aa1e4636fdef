#!/usr/bin/env bash
# Re-measured Fig. 2 on the consistent environment (issue 11, item 4), resumable: re-run to continue.
# GP: the exact GP (gp-exact) with the hyperparameters of the environment (no refits: refit_first=0), as the
# paper sets them "according to the prior".
# Order: synthetic hilly city, Monaco A/B (all methods), Luxembourg A/B (BI, then GP-TS, GP-BUCB, GP-UCB).
set -u
cd "$(dirname "$0")/.."
export EVROUTE_DATA=${EVROUTE_DATA:-/work/shared/data} OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
common=(--env consistent --potential elevation --gp-model gp-exact --runs results/consistent --tag _consistent
        --workers 2 --seeds 5 --horizon 500 --model-param refit_first=0)
run() { nice -n 10 .venv/bin/python scripts/repro_fig2.py "${common[@]}" "$@"; }
run --routes synthetic:2000:0:A
run --routes monaco:A monaco:B
run --routes luxembourg:A luxembourg:B --methods bi-ucb bi-bucb bi-ts
run --routes luxembourg:A luxembourg:B --methods gp-ts
run --routes luxembourg:A luxembourg:B --methods gp-bucb
run --routes luxembourg:A luxembourg:B --methods gp-ucb
