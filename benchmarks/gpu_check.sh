#!/usr/bin/env bash
# One prepared check of the OpenCL backend on a machine with an NVIDIA GPU: the test suite on
# opencl:0, then every benchmark.
#
# What it needs:
#   * a Linux x86-64 machine with an NVIDIA GPU and its driver, including the OpenCL part
#     (/usr/lib/libnvidia-opencl.so.1, which the script registers as an OpenCL ICD) and nvidia-smi;
#   * Python 3.12 as `python3`, with numpy, pluggy, tqdm and pytest installed (torch with CUDA is
#     optional: when importable, the GEMM benchmark adds cuBLAS as a reference);
#   * the wheels that `--download` fetches (pyopencl and its dependencies, plus safetensors and
#     hypothesis, which parts of the test suite import), in .whl/ at the repository root.
#
# How to run it, from anywhere (it changes to the repository root itself):
#
#     bash benchmarks/gpu_check.sh --download   # once, on a machine with network access:
#                                               # fills .whl/ (kept out of git via .git/info/exclude)
#     bash benchmarks/gpu_check.sh              # on the GPU machine, with .whl/ copied along
#
# All steps together stay under about 12 minutes; pick steps to fit a shorter lease. It installs
# the wheels into /tmp/site, registers NVIDIA's OpenCL ICD, prints the platforms, runs the test
# suite on opencl:0 (time-limited, in parallel shards: benchmarks/_shard.py), then the GEMM
# benchmark (our kernels as the tuner picks them per size, numpy, the 16x16 tiled kernel, torch
# cuBLAS fp32 with TF32 off), the GEMM variant sweep, the elementwise and copy benchmarks, the
# small training steps (eager and captured, beside torch CPU and CUDA), ResNet-18 and GPT
# training steps (eager and captured) beside torch CUDA, language-model decoding beside torch
# CUDA, 16-bit GEMM/convolution, the convolution paths on ResNet-18's layers (each forced, beside
# torch CUDA), fused attention against its composition, a profile of one training step of each model (ops, then kernels, by device time) and `python -m portagrad demo`.
# Everything is teed to $OUT/gpu_check.log (./gpu_check.log when $OUT is unset). Each step has
# its own time limit, so one stuck step cannot eat the others' time; the exit status is that of
# the test step. GPU_CHECK_STEPS picks steps (all of them: tests gemm sweep elementwise copy
# train models generate half16 conv attention profile demo), SHARDS and TEST_LIMIT size the test
# step, GPU_CHECK_TESTS picks the tests and GEMM_SIZES the GEMM sizes.
# `GPU_CHECK_LOCAL=1 bash benchmarks/gpu_check.sh` is a dry run on a machine that already has
# pyopencl (PoCL, for example).
set -u
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--download" ]; then
    grep -qx '/.whl/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info && echo /.whl/ >> .git/info/exclude; }
    exec python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d .whl pyopencl pytools siphash24 platformdirs mako \
        safetensors hypothesis attrs sortedcontainers
fi

OUTDIR="${OUT:-.}"
mkdir -p "$OUTDIR"
LOG="$OUTDIR/gpu_check.log"
: > "$LOG"
step() { echo; echo "=== $* ($(date +%T))"; }

{
    step "environment"
    if [ -z "${GPU_CHECK_LOCAL:-}" ]; then  # GPU_CHECK_LOCAL=1: a dry run where pyopencl is installed
        ls .whl/*.whl >/dev/null 2>&1 || { echo "no wheels in .whl/: run 'bash benchmarks/gpu_check.sh --download' on the development machine and carry .whl"; exit 2; }
        python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
        export PYTHONPATH=/tmp/site:$PWD
        mkdir -p /tmp/vendors && echo /usr/lib/libnvidia-opencl.so.1 > /tmp/vendors/nvidia.icd
        export OCL_ICD_VENDORS=/tmp/vendors
    else
        export PYTHONPATH=$PWD
    fi
    export PYTHONUNBUFFERED=1
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | head -5
    python3 - <<'EOF'
import numpy, pyopencl as cl
print("python", __import__("sys").version.split()[0], "numpy", numpy.__version__, "pyopencl", cl.VERSION_TEXT)
for p in cl.get_platforms():
    for d in p.get_devices():
        print(f"{p.name}: {d.name} | {d.version} | CUs {d.max_compute_units} | "
              f"local mem {d.local_mem_size} | max wg {d.max_work_group_size}")
import portagrad as pg
print("portagrad devices:", pg.opencl.device_count(), pg.opencl.get_device_name(0))
EOF
    [ $? -eq 0 ] || exit 1

    want() { case " ${GPU_CHECK_STEPS:-tests gemm sweep elementwise copy train models generate half16 conv attention profile demo} " in *" $1 "*) return 0;; esac; return 1; }
    test_rc=0
    if want tests; then
    step "tests on opencl:0: ${SHARDS:=8} parallel shards (limit ${TEST_LIMIT:=240} s)"
    # The collected tests are dealt round-robin to $SHARDS pytest processes (benchmarks/_shard.py;
    # 16 cores there: NVIDIA's compiler is CPU-bound). Each shard has its own pyopencl cache
    # directory, so the processes never wait on each other's cache lock. --maxfail rather than -x:
    # one failure from the environment must not hide the others.
    export PORTAGRAD_TEST_DEVICES=opencl:0
    for k in $(seq 0 $((SHARDS - 1))); do
        PG_SHARD=$k/$SHARDS XDG_CACHE_HOME=/tmp/cache_$k timeout -k 10 "$TEST_LIMIT" python3 -m pytest \
            -q --maxfail=25 -p no:cacheprovider -p benchmarks._shard ${GPU_CHECK_TESTS:-tests} \
            > /tmp/shard_$k.log 2>&1 &
    done
    test_rc=0
    for job in $(jobs -p); do wait "$job" || test_rc=1; done
    for k in $(seq 0 $((SHARDS - 1))); do
        echo "--- shard $k: $(tail -n 1 /tmp/shard_$k.log)"
        grep -E '^(FAILED|ERROR)' /tmp/shard_$k.log | head -20
    done
    # the first shard's failures in full (the short summary above names them all)
    grep -q -E '^(FAILED|ERROR)' /tmp/shard_*.log && sed -n '/= FAILURES =/,/short test summary/p' \
        $(grep -l -E '^(FAILED|ERROR)' /tmp/shard_*.log | head -1) | head -300
    echo "pytest exit status (any shard failing: 1): $test_rc"
    fi

    if want gemm; then
    step "GEMM: our kernels (tuned per size) vs numpy, 16x16 tiled, torch cuBLAS fp32 TF32 off (limit 120 s)"
    timeout -k 5 120 python3 -m benchmarks.gemm --sizes "${GEMM_SIZES:-1024,2048,4096,8192}"
    fi
    if want sweep; then
    step "GEMM kernel variants: gpu3 tiles (limit 75 s)"
    timeout -k 5 75 python3 -m benchmarks.gemm_sweep --sizes 1024,4096 --budget 65
    fi
    if want elementwise; then
    step "elementwise (limit 60 s)"
    timeout -k 5 60 python3 -m benchmarks.elementwise
    fi
    if want copy; then
    step "host<->device copies (limit 60 s)"
    timeout -k 5 60 python3 -m benchmarks.copy
    fi
    if want train; then
    step "training steps: MLP and demo CNN on opencl:0, eager and captured, beside torch CPU and CUDA (limit 75 s)"
    timeout -k 5 75 python3 -m benchmarks.train_step --no-memory --steps 20 --rounds 3 --capture --device opencl:0
    fi
    if want models; then
    step "ResNet-18 and GPT training steps on opencl:0 beside torch CUDA fp32, TF32 off (limit 150 s)"
    timeout -k 5 150 python3 -m benchmarks.models --model all --device opencl:0 --torch-device cuda --steps 5 --warmup 3 --capture
    fi
    if want generate; then
    step "GPT-2-small greedy decoding on opencl:0 beside torch CUDA fp32 (limit 90 s)"
    timeout -k 5 90 python3 -m benchmarks.generate --device opencl:0 --torch-device cuda --prompt 128 --new 32 --rounds 2
    fi
    if want half16; then
    step "16-bit GEMM and convolution beside float32 (limit 45 s)"
    timeout -k 5 45 python3 -m benchmarks.half16 --quick
    fi
    if want conv; then
    step "convolution paths on ResNet-18's layers, batch 128, beside torch CUDA (limit 150 s)"
    timeout -k 5 150 python3 -m benchmarks.conv --device opencl:0 --kinds implicit,tiled,im2col --bn
    fi
    if want attention; then
    step "fused attention against the composition (limit 60 s)"
    timeout -k 5 60 python3 -m benchmarks.attention --device opencl:0 --lengths 256,1024
    fi
    if want profile; then
    step "one training step of each model under the profiler, ops by device time (limit 150 s)"
    timeout -k 5 150 python3 -m benchmarks.profile_step --rows 22 --kernels
    fi
    if want demo; then
    step "python -m portagrad demo (limit 60 s)"
    timeout -k 5 60 python3 -m portagrad demo
    fi

    step "done"
    exit "$test_rc"
} 2>&1 | tee -a "$LOG"
exit "${PIPESTATUS[0]}"
