#!/usr/bin/env bash
# emvolve farm workers on a Slurm allocation: one worker per GPU on every node
# (or one CPU worker per node with --backend cpu). The run itself goes
# anywhere that reaches the NATS server:
#   emvolve run DESIGN.ron --farm nats://SERVER:4222 --creds ~/.config/emvolve/farm.creds
# Submit: sbatch --export=ALL,EMVOLVE_NATS=nats://SERVER:4222 docs/farm/slurm-workers.sh
#SBATCH --job-name=emvolve-workers
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=2
#SBATCH --gpus-per-task=1
#SBATCH --cpus-per-task=8
#SBATCH --time=08:00:00
# SIGTERM two minutes before the time limit: each worker finishes and stores
# the batch in hand, then exits; nothing is lost if one is cut off anyway.
#SBATCH --signal=TERM@120
set -euo pipefail
: "${EMVOLVE_NATS:?set EMVOLVE_NATS=nats://SERVER:4222}"
CREDS=${EMVOLVE_CREDS:-$HOME/.config/emvolve/farm.creds}
BACKEND=${EMVOLVE_BACKEND:-cuda}
# Each task sees its own GPU as device 0 (Slurm sets CUDA_VISIBLE_DEVICES).
srun --kill-on-bad-exit=0 bash -c \
  'exec emvolve worker --nats "$0" --creds "$1" --backend "$2" --name "$(hostname -s)-$SLURM_PROCID"' \
  "$EMVOLVE_NATS" "$CREDS" "$BACKEND"
