#!/usr/bin/env bash
# s13-checked-ints (session 13): pointers from integers are refused in checked mode only; the
# unchecked devices, CUDA among them, keep MSL's GPU addresses. On the GPU: the CUDA case of the
# new attack file (a buffer-device-address round trip: out must be [1, 3, 5, 7]), SPIRV-Cross's
# cs_pointer_bits survey construct (runs on CUDA) and the member-alias / auto* kernels' in-bounds
# values on the CPU (the package as installed there). Under a minute.
# Results: $OUT/s13-checked-ints/pytest.txt (pytest's report).
set -u
mkdir -p "$OUT/s13-checked-ints"
python -m pytest -q -p no:cacheprovider -rs \
  "tests/security/test_attack_checked_integer_pointers.py::test_unchecked_devices_take_gpu_addresses" \
  "tests/conformance/test_cuda_survey_constructs.py::test_pointer_bits" \
  tests/security/test_attack_checked_deduced_pointers.py \
  > "$OUT/s13-checked-ints/pytest.txt" 2>&1
rc=$?
tail -4 "$OUT/s13-checked-ints/pytest.txt"
echo "s13-checked-ints: pytest rc=$rc (expect 0, one skip: test_pointer_bits[cpu-checked]; test_unchecked_devices_take_gpu_addresses[cuda] and test_pointer_bits[cuda] must pass, not skip)"
