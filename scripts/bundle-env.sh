# env.sh of a popper bundle (scripts/bundle.sh): sourced by run.sh, or by hand
# (`. ./env.sh`) to run one of bin/ yourself. Libraries, data and llama.cpp's
# backend packages from the bundle; glibc, libstdc++ and CUDA from the machine.
popper_bundle="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PATH="$popper_bundle/bin:$PATH"
export LD_LIBRARY_PATH="$popper_bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export POPPER_DATA_DIR="$popper_bundle/share/popper"
export POPPER_GGML_CPU_DIR="$popper_bundle/lib/ggml/cpu"
export POPPER_GGML_VULKAN_DIR="$popper_bundle/lib/ggml/vulkan"
export POPPER_GGML_CUDA_DIR="$popper_bundle/lib/ggml/cuda"
# The NVIDIA driver's Vulkan ICD where the loader's default folders miss it
# (containers that mount the driver under /usr/local/nvidia).
if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] &&
   ! ls /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json >/dev/null 2>&1; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
