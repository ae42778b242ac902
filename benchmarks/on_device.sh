#!/bin/sh
# The recipe of ../shared/TPU.md as one command on the lent accelerator:
# installs tensorflow-cpu from the machine's own package index and the
# fork's wheel (.whl-tpu/, built here for the device's JAX release), unless
# an earlier call on the same warm machine did, then runs each STEP in turn,
# its output under $OUT/<step>.log, and what it writes under $OUT/<step>/
# (':' and ',' in a step's name become '_').
#
#   sh benchmarks/on_device.sh STEP...
#
# Steps: correctness (benchmarks/accelerator.py's section), symbolic
# (tests.stablehlo.symbolic_batch_on_device), bitcast
# (tests.stablehlo.bitcast_widths_on_device), exported_call
# (benchmarks/exported_call.py; exported_call:WORKLOADS with --only,
# comma-separated), keras:MODELS[:TRANSFORMS] (benchmarks/keras_models.py,
# batch of 8; both comma-separated). A step that fails is reported; the next one runs.
set -u
: "${OUT:?run on the device machine, where OUT is set}"
if [ ! -d /tmp/fork/jax ]; then
  PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q \
    --only-binary=:all: --index-url file:///opt/pypi/simple \
    --target /tmp/tf tensorflow-cpu || exit 1
  PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q \
    --no-index --no-deps --no-compile --target /tmp/fork .whl-tpu/*.whl \
    || exit 1
fi
# A TPU program killed by an earlier command's timeout leaves libtpu's lock
# behind, and every later process fails to start on the chip.
rm -f /tmp/libtpu_lockfile
export TF_CPP_MIN_LOG_LEVEL=3 PYTHONUNBUFFERED=1
export PYTHONPATH="/tmp/fork:${PYTHONPATH:-}:/tmp/tf:."
for step in "$@"; do
  name=$(echo "$step" | tr ':,' '__')
  mkdir -p "$OUT/$name"
  start=$(date +%s)
  case "$step" in
    correctness) python3 benchmarks/accelerator.py --sections correctness \
                   --budget 240 --out "$OUT/$name" ;;
    symbolic) python3 -m tests.stablehlo.symbolic_batch_on_device ;;
    bitcast) python3 -m tests.stablehlo.bitcast_widths_on_device ;;
    exported_call) python3 benchmarks/exported_call.py --out "$OUT/$name" ;;
    exported_call:*) python3 benchmarks/exported_call.py --out "$OUT/$name" \
                       --only $(echo "${step#exported_call:}" | tr ',' ' ') ;;
    keras:*:*) rest=${step#keras:}
               python3 benchmarks/keras_models.py --models "${rest%%:*}" \
                 --transforms "${rest#*:}" --batch 8 --out "$OUT/$name" ;;
    keras:*) python3 benchmarks/keras_models.py --models "${step#keras:}" \
               --batch 8 --out "$OUT/$name" ;;
    *) echo "unknown step $step" ;;
  esac > "$OUT/$name.log" 2>&1
  echo "$step: exit $? in $(( $(date +%s) - start )) s"
done
