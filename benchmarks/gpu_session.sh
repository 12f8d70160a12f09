#!/usr/bin/env bash
# One session on a lent GPU (../shared/gpu/README.md): the GPU test suite with its report, then the two GPU benchmark
# sections, each step under its own time limit so that a hang cannot eat the device time; about 9 minutes in all.
#
#   here, once:       bash ../shared/gpu/fetch_wheels.sh          (the wheels the machine lacks, in .gpu/whl)
#   on the device:    run(command="XLSTM_SUITE_COMMIT=<git rev-parse HEAD> bash benchmarks/gpu_session.sh",
#                         carry=[".gpu"], timeout_s=600)
#
# What comes back in $OUT (7 files): tests.md (results/reports/gpu/tests.md), gpu-tests.tar.gz (the junit XML and log
# of each of the two pytest runs, tests/gpu and the kernels' CUDA tests, from which `python -m tests.gpu_report
# gpu-tests.xml gpu-kernel-tests.xml` rewrites tests.md), gpu_throughput.csv and gpu_xlstm.csv (results/reports/),
# benchmarks.csv (results/reports/benchmarks.csv with the GPU sections' rows), and the logs of the session and of the
# benchmarks. Copy the four results into results/reports/ and commit them with the device's name.
#
# Time limits (seconds; environment variables): TESTS_SECONDS for each pytest run (then SIGINT: pytest writes the
# junit XML of what ran and stops the training runs under way), GPU_BUDGET and XLSTM_BUDGET for the benchmark
# sections (their models and shapes within the budget; each run gets the budget plus START_SECONDS before it is
# killed).
set -u
OUT=${OUT:-$PWD/.gpu/out}
TESTS_SECONDS=${TESTS_SECONDS:-270}
GPU_BUDGET=${GPU_BUDGET:-90}
XLSTM_BUDGET=${XLSTM_BUDGET:-90}
START_SECONDS=${START_SECONDS:-35}
mkdir -p "$OUT"
session_log="$OUT/session.log"
step() {  # step NAME SECONDS LOG COMMAND...: the command under its time limit, its output in LOG, one line each way
  local name=$1 seconds=$2 log=$3 started=$SECONDS
  shift 3
  echo "$(date +%T) $name: started (limit ${seconds} s)" | tee -a "$session_log"
  timeout -s INT -k 30 "$seconds" "$@" >>"$log" 2>&1
  local code=$?
  echo "$(date +%T) $name: exit $code after $((SECONDS - started)) s$([ $code = 124 ] && echo ', time limit')" \
    | tee -a "$session_log"
}

if [ -d .gpu/whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target .gpu/site .gpu/whl/*.whl >>"$session_log" 2>&1
fi
export PYTHONPATH=$PWD/.gpu/site:$PWD PYTHONUNBUFFERED=1
# a probe child that hangs (fla's kernels on Triton 3.6) costs a minute, not the default ten
export XLSTM_SUITE_PROBE_TIMEOUT=${XLSTM_SUITE_PROBE_TIMEOUT:-60}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, triton, rich; print('torch', torch.__version__, 'triton', triton.__version__)"; } \
  >>"$session_log" 2>&1

# the GPU suite: the files that hold tests marked gpu (collecting the whole suite would cost its imports), tests/gpu
# first; the kernels' CUDA tests live in tests/kernels and elsewhere
gpu_test_files() {
  { grep -l "pytest.mark.gpu" tests/gpu/*.py; grep -rl --include="*.py" "pytest.mark.gpu" tests | sort; } \
    | awk '!seen[$0]++'
}
# two pytest processes side by side, each under the time limit: tests/gpu (its training runs start at its first test
# and train beside its other tests) and the kernels' CUDA tests, whose Triton compiles (about a second per kernel
# variant, one thread) would otherwise queue behind the training
gpu_test() {  # gpu_test NAME FILES...: pytest -m gpu on FILES, its junit XML and log in $OUT/NAME.xml, NAME.log
  local name=$1
  shift
  step "pytest -m gpu ($name)" "$TESTS_SECONDS" "$OUT/$name.log" \
    python3 -m pytest -q -p no:cacheprovider -m gpu --junitxml="$OUT/$name.xml" "$@"
}
gpu_test gpu-tests $(gpu_test_files | grep '^tests/gpu/') &
gpu_test gpu-kernel-tests $(gpu_test_files | grep -v '^tests/gpu/') &
wait
step "gpu report" 60 "$session_log" python3 -m tests.gpu_report $(ls "$OUT"/gpu-tests.xml "$OUT"/gpu-kernel-tests.xml)
# at most 8 files come back: the tests' raw XML and logs travel as one archive
raw_test_files=$(cd "$OUT" && ls gpu-tests.xml gpu-tests.log gpu-kernel-tests.xml gpu-kernel-tests.log 2>/dev/null)
tar -czf "$OUT/gpu-tests.tar.gz" -C "$OUT" $raw_test_files 2>>"$session_log" && (cd "$OUT" && rm -f $raw_test_files)

step "benchmarks gpu" $((GPU_BUDGET + START_SECONDS)) "$OUT/benchmarks.log" \
  python3 -m benchmarks.run --only gpu --budget-seconds "$GPU_BUDGET"
step "benchmarks gpu_xlstm" $((XLSTM_BUDGET + START_SECONDS)) "$OUT/benchmarks.log" \
  python3 -m benchmarks.run --only gpu_xlstm --budget-seconds "$XLSTM_BUDGET"

for result in results/reports/gpu/tests.md results/reports/gpu_throughput.csv results/reports/gpu_xlstm.csv \
              results/reports/benchmarks.csv; do
  [ -f "$result" ] && cp "$result" "$OUT/"
done
echo "$(date +%T) done: $(ls "$OUT" | tr '\n' ' ')" | tee -a "$session_log"
