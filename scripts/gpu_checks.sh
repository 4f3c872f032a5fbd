#!/usr/bin/env bash
# The CUDA checks of a GPU box in one go, each step's log in OUT_DIR (CI has no GPU; run this on any box that has one):
#   bash scripts/gpu_checks.sh OUT_DIR [graphs] [dag] [cost] [share] [bench] [rehearsal]
#   graphs: the CUDA tests of tests/train (every graphed step equals its eager step; fp32 similarities under autocast)
#   dag:    the offline config's whole DAG on the GPU (--resources gpu=1, every core), timed
#   cost:   the paper config's cost table with each kind's speed of light (python -m harness_bench limits --config
#           config/config.yaml --device cuda: consert bench's table, each kind's step against the card's limit beside);
#           COST_STEPS=N steps per kind (150), COST_COMPARE="eager compiled graphs fused" times each kind those ways too
#   share:  whether small jobs (BERT-NLI at batch 16, SG-OPT) run 1, 2, 3 at once raise the card's throughput;
#           SHARE_STEPS=N steps per job (300), SHARE_KINDS="glob;glob" the kinds ("base bertflow-nli*;base sgopt*"),
#           SHARE_MPS=1 under NVIDIA's MPS (the workflow runs jobs that share a card so)
#   bench:  the paper-scale trainer against a plain and a compiled loop (python -m harness_bench references --device cuda)
#   rehearsal: the paper config rehearsed on tiny random BERTs on CUDA, every core (tests/workflow/test_cuda.py)
# GPU_CHECKS_PARSE_ONLY=1: each step only checks its arguments, on any machine (the tests collected, the DAG dry-run,
# the benchmarks' --parse-only): what a CPU test runs. --help: this text.
# A call of the device tool brings back at most 8 files: pack OUT_DIR into one archive after a long list of steps.
# Needs snakemake and the STS data, found as every command finds it: $CONSERT_DATA, data/senteval (where
# `consert download-data` puts it), or a SentEval folder beside the working directory or the checkout.
set -uo pipefail
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
out=${1:?usage: bash scripts/gpu_checks.sh OUT_DIR [graphs] [dag] [cost] [share] [bench] [rehearsal]}
shift
root=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"  # python -m harness_bench: the checkout's own benchmarks
parse=${GPU_CHECKS_PARSE_ONLY:+--parse-only}
collect=${GPU_CHECKS_PARSE_ONLY:+--collect-only}
dry=${GPU_CHECKS_PARSE_ONLY:+--dry-run}
mkdir -p "$out"
data=$(python3 -c "
from consert.data.senteval import DataFormatError, resolve_data_dir
try:
    print(resolve_data_dir().resolve())  # absolute: the dag step runs in a folder of its own
except DataFormatError as err:
    raise SystemExit(str(err))") || exit 2
{ date -u +%FT%TZ; nvidia-smi -L; python3 -c "import torch; print('torch', torch.__version__)"; nproc; echo "data $data"; } \
  >"$out/machine.txt" 2>&1
status=0
for step in "$@"; do
  started=$SECONDS
  case $step in
    graphs) python3 -m pytest -m cuda "$root/tests/train" -q -p no:cacheprovider --durations=3 ${collect:+"$collect"} ;;
    dag)
      work=$(mktemp -d)
      family=$(python3 -c "import importlib.util as u; print('' if u.find_spec('spacy') else 'family={methods: [simcse]}')")
      python3 -m snakemake --snakefile "$root/Snakefile" --configfile "$root/config/offline.yaml" --directory "$work" \
        --config "data_dir=$data" ${family:+"$family"} --cores "$(nproc)" --resources gpu=1 --quiet rules ${dry:+"$dry"} &&
        { [ -n "$dry" ] || { test -f "$work/results/summary.html" && (cd "$work" && ls results logs) >"$out/dag-files.txt"; }; }
      ;;
    cost)
      # shellcheck disable=SC2086  # COST_COMPARE is a list of words
      python3 -m harness_bench ${parse:+"$parse"} limits --config "$root/config/config.yaml" --device cuda \
        --steps "${COST_STEPS:-150}" --output "$out/cost.csv" --data "$data" ${COST_COMPARE:+--compare $COST_COMPARE}
      ;;
    share)
      IFS=';' read -ra kinds <<<"${SHARE_KINDS:-base bertflow-nli*;base sgopt*}"
      python3 -m harness_bench ${parse:+"$parse"} share --config "$root/config/config.yaml" --device cuda \
        --steps "${SHARE_STEPS:-300}" ${SHARE_MPS:+--mps} --output "$out/share.csv" --data "$data" "${kinds[@]}"
      ;;
    bench) python3 -m harness_bench ${parse:+"$parse"} references --device cuda --json "$out/bench.json" --data "$data" ;;
    rehearsal)
      python3 -m pytest -m cuda "$root/tests/workflow/test_cuda.py" -k rehearsal -q -p no:cacheprovider ${collect:+"$collect"}
      ;;
    *) echo "unknown step $step (graphs, dag, cost, share, bench, rehearsal)"; false ;;
  esac >"$out/$step.log" 2>&1
  code=$?
  echo "$step: exit $code in $((SECONDS - started)) s" | tee -a "$out/steps.txt"
  [ $code -eq 0 ] || status=1
done
exit $status
