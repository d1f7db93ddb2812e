#!/bin/bash
# The zoo benchmark (docs/RESULTS.md, `make zoo-bench`) as a Slurm job array: array task I runs shard I of N
# (docs/CAMPAIGNS.md). Submit from the checkout, on storage every node sees, after exporting the zoo once
# (/usr/bin/python3 zoo/zoo_export.py), then merge when every task has finished:
#
#   mkdir -p campaign/logs   # Slurm opens the --output file before the script runs
#   jid=$(sbatch --parsable docs/campaign-slurm.sh)
#   sbatch --dependency=afterok:$jid --wrap "build/grist bench merge campaign/shards --out campaign"
#
# The array must count from 1 with step 1 (--array=1-N): the task count is then N.
#SBATCH --job-name=grist-bench
#SBATCH --array=1-16
#SBATCH --cpus-per-task=1
#SBATCH --mem=4G
#SBATCH --time=04:00:00
#SBATCH --output=campaign/logs/shard-%a.out
set -euo pipefail

GRIST=${GRIST:-build/grist}
mkdir -p campaign/shards campaign/logs
exec "$GRIST" bench zoo --runs 10 --time-limit 60 --quiet \
  --shard "${SLURM_ARRAY_TASK_ID}/${SLURM_ARRAY_TASK_COUNT}" --out campaign/shards
